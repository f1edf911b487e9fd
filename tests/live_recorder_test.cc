// `exitscope record` on this machine's tracefs, with high-rate non-kvm tracepoints (sched) when the
// machine has no KVM: the file must read back with trace-cmd, the kernel's count of events read must
// match what trace-cmd prints, and the host's tracing state must be as before after a clean stop, a
// SIGINT and a SIGKILL followed by a new run. Skipped where tracefs is not mounted or not writable.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "live/live_recorder.h"
#include "live/stop_signal.h"
#include "sources/live/trace_pipe_reader.h"
#include "test_util.h"

namespace exitscope {
namespace {

namespace fs = std::filesystem;

std::string Shell(const std::string& cmd) { return testing::ReadCommand(cmd); }

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// What other tools see: top-level tracing_on, and the enable files of the events we use.
std::string HostTracingState(const std::string& tracefs) {
  return Slurp(tracefs + "/tracing_on") + Slurp(tracefs + "/events/sched/sched_switch/enable") +
         Slurp(tracefs + "/events/sched/enable") + Slurp(tracefs + "/set_event");
}

class LiveRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto t = FindTracefs();
    if (!t.ok() || ::access((*t + "/instances").c_str(), W_OK) != 0) {
      GTEST_SKIP() << "no writable tracefs here";
    }
    tracefs_ = *t;
    out_ = (fs::temp_directory_path() / ("exitscope-rec-" + std::to_string(::getpid()) + ".dat")).string();
    before_ = HostTracingState(tracefs_);
  }
  void TearDown() override {
    if (!tracefs_.empty()) {
      EXPECT_EQ(HostTracingState(tracefs_), before_);
      // Only this process's instance: other test processes may be recording in parallel.
      EXPECT_FALSE(fs::exists(tracefs_ + "/instances/exitscope-" + std::to_string(::getpid())));
    }
    fs::remove(out_);
    ClearStopRequest();
  }
  std::string tracefs_, out_, before_;
};

TEST_F(LiveRecordTest, RecordsSchedEventsThatTraceCmdReads) {
  RecordOptions o;
  o.output = out_;
  o.duration_s = 0.5;
  o.events = {"sched:sched_switch", "sched:sched_wakeup"};
  std::string seen_dir;
  o.on_started = [&](const std::string& dir) {
    seen_dir = dir;
    EXPECT_TRUE(fs::exists(dir + "/trace_pipe_raw") || fs::exists(dir + "/per_cpu"));
    // The instance, not the top level, has the events on.
    EXPECT_EQ(Slurp(dir + "/events/sched/sched_switch/enable"), "1\n");
    // Work for the scheduler while we record.
    Shell("for i in 1 2 3 4 5 6 7 8; do /bin/true; done");
  };
  auto sum = RunRecord(o);
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  EXPECT_FALSE(fs::exists(seen_dir));
  EXPECT_GT(sum->events_read, 10u);
  EXPECT_EQ(sum->events.size(), 2u);
  // trace-cmd is the oracle: every event the kernel handed us is in the file.
  std::string n = Shell("trace-cmd report -i '" + out_ + "' 2>/dev/null | grep -cE 'sched_(switch|wakeup):'");
  EXPECT_EQ(std::stoull(n), sum->events_read - 0) << "lost: " << sum->TotalLost();
}

// Whatever runs while the recorder is the current task of a CPU is recorded: the kernel's notrace
// pid (which once excluded us) drops every event on that CPU meanwhile, interrupt-context ones too —
// an arm64 KVM host lost timer-interrupt kvm events that way. Our own syscalls, made while
// recording (in this process: RunRecord's), stand for any of them.
TEST_F(LiveRecordTest, EventsWhileTheRecorderRunsAreKept) {
  ASSERT_TRUE(fs::exists(tracefs_ + "/events/syscalls/sys_enter_getppid")) << "no syscall tracepoints";
  constexpr int kCalls = 2000;
  RecordOptions o;
  o.output = out_;
  o.duration_s = 0.2;
  o.events = {"syscalls:sys_enter_getppid"};
  o.on_started = [&](const std::string&) {
    for (int i = 0; i < kCalls; ++i) ::syscall(SYS_getppid);
  };
  auto sum = RunRecord(o);
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  EXPECT_EQ(sum->TotalLost(), 0u);
  std::string n = Shell("trace-cmd report -i '" + out_ + "' 2>/dev/null | grep -cE -- '-" + std::to_string(::getpid()) +
                        " +\\[.*getppid'");
  EXPECT_EQ(std::stoi(n), kCalls) << "events taken while the recorder was current were dropped";
}

TEST_F(LiveRecordTest, SigintStopsCleanlyAndFinishesTheFile) {
  InstallStopHandlers();
  RecordOptions o;
  o.output = out_;
  o.events = {"sched:sched_switch"};
  o.on_started = [](const std::string&) {
    Shell("/bin/true");
    std::raise(SIGINT);  // as a user's Ctrl-C, once tracing is on
  };
  auto sum = RunRecord(o);
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  EXPECT_EQ(sum->stop_signal, SIGINT);
  std::string head = Shell("trace-cmd report -i '" + out_ + "' 2>&1 | head -1");
  EXPECT_EQ(head.substr(0, 5), "cpus=");
}

TEST_F(LiveRecordTest, SigkilledRunIsCleanedByTheNextRun) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execl(EXITSCOPE_BINARY, "exitscope", "record", "-q", "-o", (out_ + ".killed").c_str(), "-e", "sched:sched_switch",
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  std::string dir = tracefs_ + "/instances/exitscope-" + std::to_string(child);
  // Wait (bounded) for the child to have set up its instance: a condition, not a timing guess.
  std::string enable = dir + "/events/sched/sched_switch/enable";
  for (int i = 0; i < 500 && Slurp(enable) != "1\n"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(Slurp(enable), "1\n");
  ::kill(child, SIGKILL);
  int st = 0;
  ::waitpid(child, &st, 0);
  EXPECT_TRUE(fs::exists(dir)) << "SIGKILL leaves the instance behind";
  // The killed run's partial output is not a trace: nothing half-written should pass for one.
  fs::remove(out_ + ".killed");

  RecordOptions o;
  o.output = out_;
  o.duration_s = 0.05;
  o.events = {"sched:sched_switch"};
  auto sum = RunRecord(o);
  ASSERT_TRUE(sum.ok()) << sum.error().message;
  EXPECT_FALSE(fs::exists(dir));
}

TEST_F(LiveRecordTest, MissingEventIsAUsageError) {
  RecordOptions o;
  o.output = out_;
  o.events = {"sched:no_such_event_here"};
  auto sum = RunRecord(o);
  ASSERT_FALSE(sum.ok());
  EXPECT_EQ(sum.error().tag, "live.no-such-event");
  EXPECT_FALSE(fs::exists(out_));
}

}  // namespace
}  // namespace exitscope
