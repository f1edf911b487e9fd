// Every input format read through a pipe, stdin ("-"), process substitution and a FIFO written
// once gives the report the file itself gives (issue 19): the input is opened once and sniffed from
// the bytes already read. Before, a FIFO blocked for ever (opened again after sniffing), `<(cat …)`
// lost its first 4 KiB, gzip text gave 0 events and trace.dat / perf.data got a false "bad magic".
#include <gtest/gtest.h>

#include <unistd.h>

#include <string>

#include "test_util.h"

namespace {

using exitscope::testing::RunCommand;

const std::string kTraces = std::string(EXITSCOPE_SHARED_DIR) + "/traces/";

// The report with every mention of the input's name replaced, so file and pipe runs compare.
std::string Without(std::string out, const std::string& name) {
  for (size_t at; !name.empty() && (at = out.find(name)) != std::string::npos;) out.replace(at, name.size(), "INPUT");
  return out;
}

// `timeout`: a hang fails the test instead of blocking the suite.
exitscope::testing::CommandResult Shell(const std::string& shell_line) {
  return RunCommand("timeout 120 bash -c '" + shell_line + "' 2>&1");
}

class InputPipe : public ::testing::TestWithParam<std::string> {};

TEST_P(InputPipe, SameReportAsTheFile) {
  const std::string file = kTraces + GetParam();
  const std::string bin = EXITSCOPE_BINARY;
  auto direct = Shell(bin + " report \"" + file + "\"");
  ASSERT_EQ(direct.status, 0) << direct.out;
  ASSERT_NE(direct.out.find("kvm_exit"), std::string::npos) << direct.out;  // counters name it: events read
  const std::string want = Without(direct.out, file);

  auto stdin_run = Shell("cat \"" + file + "\" | " + bin + " report -");
  EXPECT_EQ(stdin_run.status, 0) << stdin_run.out;
  EXPECT_EQ(Without(Without(stdin_run.out, "stdin"), "-"), Without(want, "-")) << "cat | report -";

  auto subst = Shell(bin + " report <(cat \"" + file + "\")");
  EXPECT_EQ(subst.status, 0) << subst.out;
  // bash names the pipe /dev/fd/N: the first line says which.
  std::string subst_name = subst.out.substr(0, subst.out.find('\n'));
  subst_name = subst_name.substr(subst_name.find("/dev/fd/"));
  EXPECT_EQ(Without(subst.out, subst_name), want) << "report <(cat)";

  const std::string fifo = ::testing::TempDir() + "/exitscope-fifo-" + std::to_string(::getpid());
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto via_fifo = Shell("cat \"" + file + "\" > \"" + fifo + "\" & " + bin + " report \"" + fifo + "\"; wait");
  ::unlink(fifo.c_str());
  EXPECT_EQ(via_fifo.status, 0) << via_fifo.out;
  EXPECT_EQ(Without(via_fifo.out, fifo), want) << "FIFO written once";
}

INSTANTIATE_TEST_SUITE_P(SharedTraces, InputPipe,
                         ::testing::Values("hip24-vmx/host-1vcpu-6.5.dat",           // trace.dat v7 zlib
                                           "nested-svm-6.1/kvmprobe-200.trace.dat",  // trace.dat v7 zstd
                                           "nested-svm-6.1/kvmprobe-200.perf.data",  // perf.data file mode
                                           "nested-svm-6.1/kvmprobe-200.trace-cmd-report.txt",
                                           "nested-svm-6.1/dual-5000/trace-cmd-report.txt.gz",
                                           "nested-svm-6.1/kvmprobe-200.ftrace.txt",  // tracefs trace
                                           "nested-svm-6.1/dual-5000/perf-script.txt.gz"));

TEST(InputPipe, EmptyStdinIsNamed) {
  auto r = Shell(std::string(EXITSCOPE_BINARY) + " report - < /dev/null");
  EXPECT_EQ(r.status, 65) << r.out;
  EXPECT_NE(r.out.find("'stdin' is empty [input.empty]"), std::string::npos) << r.out;
}

TEST(InputPipe, StdinTerminalIsRefusedNotWaitedOn) {
  // script(1) gives the command a terminal as stdin.
  auto r = RunCommand("timeout 60 script -qc '" + std::string(EXITSCOPE_BINARY) + " report -' /dev/null");
  EXPECT_NE(r.out.find("which is a terminal [input.stdin-terminal]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("hint: "), std::string::npos) << r.out;
}

}  // namespace
