// Text damage that used to give a quiet, smaller or wrong answer (issue 19): timestamps going back,
// a file whose newlines were lost (1 event read), a cut last line accepted with a cut RIP. Made
// from a real shared `trace-cmd report` text.
#include <gtest/gtest.h>

#include "damage_test.h"

namespace exitscope::testing {
namespace {

const char kText[] = "nested-svm-6.1/kvmprobe-200.trace-cmd-report.txt";

void ExpectPartial(const DamageRun& r, const std::string& counter) {
  EXPECT_EQ(r.status, 65) << r.out;
  EXPECT_TRUE(Has(r.out, "PARTIAL RESULT: ")) << r.out;
  EXPECT_TRUE(Has(r.out, counter)) << r.out;
}

TEST(TextDamage, UndamagedTextIsComplete) {
  DamageRun r = RunOnDamaged("whole.txt", ReadShared(kText), "report");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_TRUE(Has(r.out, "kvm_exit 2,610 · kvm_entry 2,610")) << r.out;
}

// The first event line (a non-kvm kvm_* event) stamped after the last one.
TEST(TextDamage, TimestampGoingBackIsFlagged) {
  std::string f = ReadShared(kText);
  size_t line = f.find("    14.711851: kvm_update_master_clock");
  ASSERT_NE(line, std::string::npos);
  f.replace(line + 4, 9, "99.711851");
  for (const char* how : {"report", "report -j 1"}) {
    DamageRun r = RunOnDamaged("back.txt", f, how);
    ExpectPartial(r, "text.time_backwards");
  }
}

// One line's timestamp damaged (a digit changed) must not stretch the 0.220 s the text spans.
TEST(TextDamage, OneFarTimestampIsSkippedNotStretchingTheDuration) {
  const std::string whole = ReadShared(kText);
  EXPECT_TRUE(Has(RunOnDamaged("whole.txt", whole, "report").out, "duration 0.220 s"));
  struct Damage {
    const char* what;
    std::string from, to;
    bool last;
    const char* duration;  // of the lines left (without its last line the text spans 0.174 s)
  };
  const Damage damages[] = {
      {"the last line 80 s later", "    14.931606: kvm_write_tsc_offset", "    94.931606: kvm_write_tsc_offset", true,
       "duration 0.174 s"},
      {"the first line 10 s earlier", "    14.711851: kvm_update_master_clock",
       "     4.711851: kvm_update_master_clock", false, "duration 0.220 s"},
      {"a kvm_exit inside 10 s earlier", "    14.803576: kvm_exit", "     4.803576: kvm_exit", false,
       "duration 0.220 s"},
      {"a kvm_exit inside 80 s later", "    14.803576: kvm_exit", "    94.803576: kvm_exit", false, "duration 0.220 s"},
  };
  for (const Damage& d : damages) {
    std::string f = whole;
    size_t at = d.last ? f.rfind(d.from) : f.find(d.from);
    ASSERT_NE(at, std::string::npos) << d.from;
    if (d.last) {
      ASSERT_EQ(f.find('\n', at), f.size() - 1) << "not the last line";
    }
    f.replace(at, d.from.size(), d.to);
    for (const char* how : {"report", "report -j 1"}) {
      SCOPED_TRACE(std::string(d.what) + ": " + how);
      DamageRun r = RunOnDamaged("far.txt", f, how);
      ExpectPartial(r, "text.timestamp_outlier");
      EXPECT_TRUE(Has(r.out, d.duration)) << r.out.substr(0, 400);
    }
  }
}

TEST(TextDamage, FileOnOneLineIsFlagged) {
  std::string f = ReadShared(kText);
  for (char& c : f)
    if (c == '\n') c = ' ';
  DamageRun r = RunOnDamaged("one.txt", f, "report");
  ExpectPartial(r, "text.overlong_line");
  // Through a pipe the line arrives in chunks: flagged the same.
  auto piped = RunCommand("tr '\\n' ' ' < '" + kSharedTraces + kText + "' | " + EXITSCOPE_BINARY + " report - 2>&1");
  ExpectPartial({piped.status, piped.out}, "text.overlong_line");
}

TEST(TextDamage, CutLastLineIsNotReadWithACutRip) {
  std::string f = ReadShared(kText);
  size_t exit = f.rfind("kvm_exit:");
  ASSERT_NE(exit, std::string::npos);
  size_t rip = f.find("rip 0x", exit);
  ASSERT_NE(rip, std::string::npos);
  f.resize(rip + 8);  // "rip 0x10": the RIP cut to its first digits
  DamageRun r = RunOnDamaged("cut.txt", f, "report --json");
  EXPECT_EQ(r.status, 65) << r.out;
  EXPECT_TRUE(Has(r.out, "text.truncated_last_line")) << r.out;
  EXPECT_TRUE(Has(r.out, "\"kvm_exit\": 2609")) << "the cut exit is not counted: " << r.out.substr(0, 800);
  auto piped = RunCommand("head -c " + std::to_string(f.size()) + " '" + kSharedTraces + kText + "' | " +
                          EXITSCOPE_BINARY + " report - 2>&1");
  ExpectPartial({piped.status, piped.out}, "text.truncated_last_line");
}

}  // namespace
}  // namespace exitscope::testing
