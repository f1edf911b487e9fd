// `exitscope dump` as a user runs it: exit codes, error/hint text, filters, JSON lines.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace {

const std::string kBin = EXITSCOPE_BINARY;
const std::string kShared = EXITSCOPE_SHARED_DIR;

std::pair<int, std::string> RunDump(const std::string& args) {
  std::string cmd = kBin + " dump " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  return {WEXITSTATUS(status), out};
}

TEST(DumpCommand, MissingFileIs66WithHint) {
  auto [rc, out] = RunDump("/nonexistent/trace.dat");
  EXPECT_EQ(rc, 66);
  EXPECT_NE(out.find("error: "), std::string::npos);
  EXPECT_NE(out.find("hint: "), std::string::npos);
}

TEST(DumpCommand, HeaderOnlyFilesExitZeroWithNoEvents) {
  for (const char* f : {"v6-no-events.dat", "v7-metadata-only.dat"}) {
    auto [rc, out] = RunDump(kShared + "/traces/hip24-vmx/" + f);
    EXPECT_EQ(rc, 0) << f << out;
    // v6-no-events.dat was recorded with trace-cmd -C tsc2nsec but holds no TSC2NSEC option: its
    // times are TSC cycles, which dump says (once, before the events) rather than print them as ns.
    EXPECT_EQ(out, std::string(f) == "v6-no-events.dat"
                       ? "# warning: clock tsc2nsec: times are TSC cycles, not ns (no TSC2NSEC option); pass "
                         "--tsc-khz N (the recording host's TSC rate) to convert\n"
                       : "")
        << f;
  }
}

TEST(DumpCommand, EventFilterLimitAndJson) {
  auto [rc, out] = RunDump(kShared + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat --event kvm_exit --limit 2 --ns");
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out,
            "14.747993547 001 499 kvmprobe kvm_exit: exit_reason=1024 guest_rip=0x1000 isa=2 info1=0x100000014 "
            "info2=0x1000 intr_info=0 error_code=0 vcpu_id=0\n"
            "14.747993547 001 499 kvmprobe kvm_exit: exit_reason=114 guest_rip=0x1012 isa=2 info1=0x0 info2=0x0 "
            "intr_info=0 error_code=0 vcpu_id=0\n");
  auto [jrc, json] = RunDump(kShared + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat --json --event kvm:kvm_msr -n 1");
  EXPECT_EQ(jrc, 0);
  EXPECT_NE(json.find("\"event\":\"kvm_msr\""), std::string::npos) << json;
  EXPECT_NE(json.find("\"ecx\":27"), std::string::npos) << json;
  auto [urc, unknown] = RunDump(kShared + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat --event no_such_event");
  EXPECT_EQ(urc, 64);
}

// Lines are formatted on worker threads in batches and written in order: the same bytes as the
// reading thread formatting them all, on traces of many batches (dual-5000: ~90 of 4096 records)
// and on files with loss records (a '# lost' line before a record, and before one left out).
TEST(DumpCommand, ThreadsPrintTheSameBytesInTheSameOrder) {
  const std::string seeds = std::string(EXITSCOPE_TESTDATA_DIR) + "/../../fuzz/corpus/perfdata_rounds/";
  const std::string svm = kShared + "/traces/nested-svm-6.1/dual-5000/";
  const std::vector<std::pair<std::string, std::string>> runs = {
      {svm + "trace.dat", ""},
      {svm + "perf.data", "--json"},
      {svm + "perf.data", "--event kvm_entry -n 5000"},
      {kShared + "/traces/nested-arm64-6.1/trace.dat", "--event kvm_exit --ns"},
      {seeds + "dual-5000-40rec-rounds4-late.perf.data", ""},
      {seeds + "kvmprobe-200-60rec-rounds5-late.perf.data", "--event kvm_exit"},
  };
  for (const auto& [file, args] : runs) {
    auto [rc1, one] = RunDump("-j 1 " + args + " " + file);
    auto [rc3, three] = RunDump("-j 3 " + args + " " + file);
    EXPECT_EQ(rc1, rc3) << file << " " << args;
    EXPECT_GT(one.size(), 100u) << file << " " << args;
    EXPECT_TRUE(one == three) << file << " " << args << ": outputs differ (" << one.size() << " vs " << three.size()
                              << " bytes)";
    if (file.find("-late") != std::string::npos) EXPECT_NE(one.find("# lost "), std::string::npos) << file;
  }
}

}  // namespace
