// Every subcommand's --help teaches the same things: what it reads, examples, what PARTIAL means
// (where results can be partial) and its exit codes; --help itself exits 0.
#include <gtest/gtest.h>

#include <cstdio>
#include <sys/wait.h>

#include "test_util.h"

namespace {

using Help = exitscope::testing::CommandResult;

Help RunHelp(const std::string& command) {
  Help h = exitscope::testing::RunCommand(std::string(EXITSCOPE_BINARY) + " " + command + " --help 2>&1");
  return h;
}

TEST(CliHelpTest, EveryCommandHasTitleExamplesAndExitStatus) {
  for (const char* c : {"report", "dump", "record", "top", "advise", "bench", "diff"}) {
    Help h = RunHelp(c);
    EXPECT_EQ(h.status, 0) << c;
    EXPECT_EQ(h.out.rfind(std::string("exitscope ") + c + ": ", 0), 0u) << c << " title line";
    EXPECT_NE(h.out.find("Examples:"), std::string::npos) << c;
    EXPECT_NE(h.out.find("Exit status: 0 "), std::string::npos) << c;
    EXPECT_NE(h.out.find("64 bad option"), std::string::npos) << c;
  }
}

TEST(CliHelpTest, FileCommandsNameTheirInputsAndPartial) {
  for (const char* c : {"report", "dump", "advise", "diff"}) {
    Help h = RunHelp(c);
    EXPECT_NE(h.out.find("Inputs (detected by content): trace.dat"), std::string::npos) << c;
    EXPECT_NE(h.out.find("perf.data"), std::string::npos) << c;
  }
  // diff names the tests behind "beyond noise" and its threshold exit.
  Help d = RunHelp("diff");
  EXPECT_NE(d.out.find("conditional binomial test"), std::string::npos);
  EXPECT_NE(d.out.find("Mann-Whitney U"), std::string::npos);
  EXPECT_NE(d.out.find("1 a --fail-if threshold tripped"), std::string::npos);
  Help r = RunHelp("report");
  EXPECT_NE(r.out.find("PARTIAL: "), std::string::npos);
  EXPECT_NE(r.out.find("UNTIMED"), std::string::npos);
  EXPECT_NE(r.out.find("trace text"), std::string::npos);
  for (const char* c : {"record", "top"}) EXPECT_NE(RunHelp(c).out.find("Needs root"), std::string::npos) << c;
  // dump reads what report reads, and says so.
  EXPECT_NE(RunHelp("dump").out.find("trace text"), std::string::npos);
  // The filters say their valid values and the cross-ISA mapping the filter does.
  EXPECT_NE(r.out.find("npf = EPT_VIOLATION"), std::string::npos);
  EXPECT_NE(r.out.find("1..4194304"), std::string::npos);
}

}  // namespace
