// A failed write of the output is an error, never exit 0 (issue 19): `report`/`dump` into /dev/full
// (ENOSPC), into a closed stdout (EBADF) or into a pipe whose reader left while SIGPIPE is ignored
// (EPIPE) exit 74 with "error: … [output.write]" and a hint (cli/command.h FinishStdout). A reader
// that leaves early with SIGPIPE at its default (`| head`) ends exitscope quietly, as coreutils.
#include <gtest/gtest.h>

#include <csignal>
#include <string>

#include "test_util.h"

namespace {

using exitscope::testing::RunCommand;

const std::string kTrace = "'" + std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat'";
const std::string kText =
    "'" + std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/kvmprobe-200.trace-cmd-report.txt'";

// stderr of `args` with stdout redirected as `redirect`, and the exit status.
exitscope::testing::CommandResult Stderr(const std::string& args, const std::string& redirect) {
  return RunCommand("bash -c \"" + std::string(EXITSCOPE_BINARY) + " " + args + " " + redirect + "\" 2>&1");
}

// Where a piped run's stderr goes, so the pipeline's status stays exitscope's.
// One file per test: ctest -j runs this file's tests as separate processes at the same time.
std::string ErrFile() {
  return ::testing::TempDir() + "/exitscope-output-errors." +
         ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".err";
}

void ExpectOutputError(const std::string& args, const std::string& redirect, const std::string& why) {
  auto r = Stderr(args, redirect);
  EXPECT_EQ(r.status, 74) << args << " " << redirect << "\n" << r.out;
  EXPECT_NE(r.out.find("error: cannot write the output: " + why + " [output.write]"), std::string::npos)
      << args << " " << redirect << "\n"
      << r.out;
  EXPECT_NE(r.out.find("hint: "), std::string::npos) << r.out;
}

TEST(OutputErrors, FullDiskIsExit74) {
  ExpectOutputError("report " + kTrace, "> /dev/full", "No space left on device");
  ExpectOutputError("report --json " + kTrace, "> /dev/full", "No space left on device");
  ExpectOutputError("dump " + kTrace, "> /dev/full", "No space left on device");
  ExpectOutputError("dump " + kText, "> /dev/full", "No space left on device");
  ExpectOutputError("advise " + kTrace, "> /dev/full", "No space left on device");
  ExpectOutputError("report --by rip " + kTrace, "> /dev/full", "No space left on device");
}

TEST(OutputErrors, ClosedStdoutIsExit74) {
  ExpectOutputError("report " + kTrace, ">&-", "Bad file descriptor");
  ExpectOutputError("dump " + kTrace, ">&-", "Bad file descriptor");
}

TEST(OutputErrors, ReaderGoneWithSigpipeIgnoredIsExit74) {
  auto s = RunCommand("bash -c 'trap \"\" PIPE; " + std::string(EXITSCOPE_BINARY) + " dump " + kTrace + " 2>" +
                      ErrFile() + " | head -c 1 >/dev/null; echo ${PIPESTATUS[0]}; cat " + ErrFile() + "'");
  EXPECT_EQ(s.out.substr(0, 3), "74\n") << s.out;
  EXPECT_NE(s.out.find("error: cannot write the output: Broken pipe [output.write]"), std::string::npos) << s.out;
}

TEST(OutputErrors, HeadEndsItQuietly) {
  // Other tests in this process (live/stop_signal.cc) ignore SIGPIPE, and children inherit that.
  auto previous = std::signal(SIGPIPE, SIG_DFL);
  auto s = RunCommand("bash -c '" + std::string(EXITSCOPE_BINARY) + " dump " + kTrace + " 2>" + ErrFile() +
                      " | head -n 1 >/dev/null; echo ${PIPESTATUS[0]}; cat " + ErrFile() + "'");
  std::signal(SIGPIPE, previous);
  EXPECT_EQ(s.out, "141\n") << "killed by SIGPIPE, nothing on stderr: " << s.out;
}

}  // namespace
