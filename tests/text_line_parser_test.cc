// TextLineParser (sources/text/text_line_parser.h): one line of `trace-cmd report`, `perf script` or
// the kernel's trace file -> comm, tid, cpu, time, event and body; and the lost-events lines.
#include "sources/text/text_line_parser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace exitscope {
namespace {

const std::string kSvm = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/";

// Every kvm_exit line of a real rendering parses in its dialect, on one of the run's 2 CPUs, in time
// order, with a body that starts where the kvm_exit arguments do.
void ExpectEveryExitLineParses(const std::string& path, TextDialect dialect, std::string_view body_start) {
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  std::string line;
  uint64_t exits = 0, parsed = 0, last_ts = 0;
  while (std::getline(in, line)) {
    if (line.find("kvm_exit:") == std::string::npos) continue;
    ++exits;
    TextLine l;
    if (!ParseTextLine(line, &l)) {
      ADD_FAILURE() << path << ": " << line;
      continue;
    }
    ++parsed;
    EXPECT_EQ(l.event, "kvm_exit") << line;
    EXPECT_EQ(l.dialect, dialect) << line;
    EXPECT_EQ(l.comm, "kvmprobe") << line;
    EXPECT_GT(l.tid, 0) << line;
    EXPECT_TRUE(l.cpu == 0 || l.cpu == 1) << line;
    EXPECT_GE(l.ts_ns, last_ts) << line;
    EXPECT_EQ(l.body.substr(0, body_start.size()), body_start) << line;
    last_ts = l.ts_ns;
  }
  EXPECT_GT(exits, 2000u) << path;
  EXPECT_EQ(parsed, exits) << path;
}

TEST(TextLineParser, EveryExitLineOfThreeRealRenderings) {
  ExpectEveryExitLineParses(kSvm + "kvmprobe-200.ftrace.txt", TextDialect::kKernelTrace, "vcpu 0 reason ");
  ExpectEveryExitLineParses(kSvm + "kvmprobe-200.perf-script.txt", TextDialect::kPerfScript, "vcpu 0 reason ");
  ExpectEveryExitLineParses(kSvm + "kvmprobe-200.trace-cmd-report.txt", TextDialect::kTraceCmd, "reason EXIT_");
}

TEST(TextLineParser, Dialects) {
  TextLine l;
  ASSERT_TRUE(ParseTextLine("  my vm-thread-506 (  500) [011] d..1.  14.789538: kvm_entry: vcpu 1, rip 0x10", &l));
  EXPECT_EQ(l.comm, "my vm-thread");
  EXPECT_EQ(l.tid, 506);
  EXPECT_EQ(l.cpu, 11);
  EXPECT_EQ(l.ts_ns, 14789538000u);
  EXPECT_EQ(l.dialect, TextDialect::kKernelTrace);
  EXPECT_EQ(l.body, "vcpu 1, rip 0x10");
  ASSERT_TRUE(ParseTextLine(" CPU 0/KVM  7001/7003 [002]  5.000000001:  kvm:kvm_exit: vcpu 0 reason HLT", &l));
  EXPECT_EQ(l.comm, "CPU 0/KVM");
  EXPECT_EQ(l.tid, 7003);
  EXPECT_EQ(l.ts_ns, 5000000001u);
  EXPECT_EQ(l.system, "kvm");
  EXPECT_EQ(l.dialect, TextDialect::kPerfScript);
  EXPECT_FALSE(ParseTextLine("cpus=2", &l));
  EXPECT_FALSE(ParseTextLine("kvmprobe-506 [001] notatime: kvm_exit: x", &l));
  int32_t cpu;
  uint64_t count;
  ASSERT_TRUE(ParseLostLine("CPU:3 [LOST 1234 EVENTS]", &cpu, &count));
  EXPECT_EQ(cpu, 3);
  EXPECT_EQ(count, 1234u);
}

}  // namespace
}  // namespace exitscope
