// Every subcommand's --help teaches the same things: what it reads, examples, what PARTIAL means
// (where results can be partial) and its exit codes; --help itself exits 0.
#include <gtest/gtest.h>

#include <cstdio>
#include <sys/wait.h>

namespace {

struct Help {
  std::string text;
  int status = -1;
};

Help RunHelp(const std::string& command) {
  Help h;
  FILE* p = popen((std::string(EXITSCOPE_BINARY) + " " + command + " --help 2>&1").c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) h.text.append(buf, n);
  int st = pclose(p);
  h.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return h;
}

TEST(CliHelpTest, EveryCommandHasTitleExamplesAndExitStatus) {
  for (const char* c : {"report", "dump", "record", "top"}) {
    Help h = RunHelp(c);
    EXPECT_EQ(h.status, 0) << c;
    EXPECT_EQ(h.text.rfind(std::string("exitscope ") + c + ": ", 0), 0u) << c << " title line";
    EXPECT_NE(h.text.find("Examples:"), std::string::npos) << c;
    EXPECT_NE(h.text.find("Exit status: 0 "), std::string::npos) << c;
    EXPECT_NE(h.text.find("64 bad option"), std::string::npos) << c;
  }
}

TEST(CliHelpTest, FileCommandsNameTheirInputsAndPartial) {
  for (const char* c : {"report", "dump"}) {
    Help h = RunHelp(c);
    EXPECT_NE(h.text.find("Inputs (detected by content): trace.dat"), std::string::npos) << c;
    EXPECT_NE(h.text.find("perf.data"), std::string::npos) << c;
  }
  Help r = RunHelp("report");
  EXPECT_NE(r.text.find("PARTIAL: "), std::string::npos);
  EXPECT_NE(r.text.find("UNTIMED"), std::string::npos);
  EXPECT_NE(r.text.find("trace text"), std::string::npos);
  for (const char* c : {"record", "top"}) EXPECT_NE(RunHelp(c).text.find("Needs root"), std::string::npos) << c;
}

}  // namespace
