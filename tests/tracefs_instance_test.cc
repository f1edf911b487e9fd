// TracefsInstance (sources/live/tracefs_instance.h) on a fake tracefs in a temporary directory
// (tests/fake_tracefs.h): creating instances/exitscope-<pid> with tracing off, enabling events,
// the pid filter, removal (by Remove and by the destructor, also after a failed Create), and the
// removal of instances a SIGKILLed run left. The same paths on the real tracefs: live_recorder_test
// (where tracefs is writable) and the kvmhost suite.
#include "sources/live/tracefs_instance.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <set>

#include "fake_tracefs.h"
#include "model/kvm_event.h"

namespace exitscope {
namespace {

namespace fs = std::filesystem;
using testing::FakeTracefs;
using testing::ReadText;

const std::string kFormats = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/formats/";

std::string OwnInstance(const FakeTracefs& t) {
  return t.root() + "/instances/exitscope-" + std::to_string(::getpid());
}

// A pid that is certainly not running: a child that has exited and been reaped.
int DeadPid() {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

TEST(TracefsInstance, CreateMakesOwnInstanceWithTracingOffAndRemoveDeletesIt) {
  FakeTracefs t;
  t.AddEvent("kvm", "kvm_exit", ReadText(kFormats + "kvm_exit.format"));
  auto inst = TracefsInstance::Create(t.root(), 2048, FakeTracefs::Ops());
  ASSERT_TRUE(inst.ok()) << inst.error().message;
  EXPECT_EQ((*inst)->dir(), OwnInstance(t));
  EXPECT_TRUE(fs::is_directory(OwnInstance(t)));
  EXPECT_EQ(ReadText(OwnInstance(t) + "/tracing_on"), "0");  // a new instance traces: switched off
  EXPECT_EQ(ReadText(OwnInstance(t) + "/buffer_size_kb"), "2048");
  // Not ourselves either: a notrace pid drops the interrupts taken while we run (live_recorder_test).
  EXPECT_EQ(ReadText(OwnInstance(t) + "/set_event_notrace_pid"), "");
  EXPECT_EQ((*inst)->cpu_count(), testing::kFakeCpus);
  EXPECT_EQ((*inst)->page_size(), 4096u);  // header_page: data at 16, 4080 bytes
  ASSERT_TRUE((*inst)->SetTracingOn(true).ok());
  EXPECT_EQ(ReadText(OwnInstance(t) + "/tracing_on"), "1");
  ASSERT_TRUE((*inst)->Remove().ok());
  EXPECT_FALSE(fs::exists(OwnInstance(t)));
  EXPECT_TRUE((*inst)->Remove().ok());  // idempotent
}

TEST(TracefsInstance, DestructorRemovesTheInstance) {
  FakeTracefs t;
  {
    auto inst = TracefsInstance::Create(t.root(), 0, FakeTracefs::Ops());
    ASSERT_TRUE(inst.ok()) << inst.error().message;
    EXPECT_TRUE(fs::exists(OwnInstance(t)));
    EXPECT_EQ(ReadText(OwnInstance(t) + "/buffer_size_kb"), "");  // 0: the kernel's size kept
  }
  EXPECT_FALSE(fs::exists(OwnInstance(t)));
}

TEST(TracefsInstance, EnablesEventsAndSkipsMissingOnlyWhenAsked) {
  FakeTracefs t;
  t.AddEvent("kvm", "kvm_exit", ReadText(kFormats + "kvm_exit.format"));
  t.AddEvent("kvm", "kvm_entry", ReadText(kFormats + "kvm_entry.format"));
  auto inst = TracefsInstance::Create(t.root(), 0, FakeTracefs::Ops());
  ASSERT_TRUE(inst.ok()) << inst.error().message;
  ASSERT_TRUE((*inst)->EnableEvents({"kvm:kvm_exit", "kvm_entry", "kvm:kvm_not_in_this_kernel"}, true).ok());
  ASSERT_EQ((*inst)->events().size(), 2u);
  EXPECT_EQ((*inst)->events()[0].name, "kvm_exit");
  EXPECT_EQ((*inst)->events()[1].system, "kvm");
  EXPECT_EQ((*inst)->events()[0].format, ReadText(kFormats + "kvm_exit.format"));
  EXPECT_EQ(ReadText(OwnInstance(t) + "/events/kvm/kvm_exit/enable"), "1");
  EXPECT_EQ(ReadText(OwnInstance(t) + "/events/kvm/kvm_entry/enable"), "1");

  Status missing = (*inst)->EnableEvents({"kvm:kvm_not_in_this_kernel"}, false);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().tag, "live.no-such-event");
  Status no_system = (*inst)->EnableEvents({"nosuchsystem:x"}, false);
  ASSERT_FALSE(no_system.ok());
  EXPECT_EQ(no_system.error().tag, "live.no-such-event");
}

// The defaults on each real kernel's event list (the formats the x86 and arm64 hosts wrote): every
// event the decoder models that the kernel has is enabled, and only events it has.
TEST(TracefsInstance, DefaultsEnableEveryModeledEventOfEachIsa) {
  for (const char* dir : {"nested-svm-6.1", "nested-arm64-6.1"}) {
    const fs::path formats = fs::path(EXITSCOPE_SHARED_DIR) / "traces" / dir / "formats";
    FakeTracefs t;
    std::set<std::string> modeled, expected;
    for (int k = 1; k < static_cast<int>(EventKind::kCount); ++k) {
      modeled.insert(std::string(EventKindName(static_cast<EventKind>(k))));
    }
    for (const auto& f : fs::directory_iterator(formats)) {
      if (f.path().extension() != ".format") continue;
      const std::string name = f.path().stem();
      t.AddEvent("kvm", name, ReadText(f.path()));
      if (modeled.count(name)) expected.insert(name);
    }
    auto inst = TracefsInstance::Create(t.root(), 0, FakeTracefs::Ops());
    ASSERT_TRUE(inst.ok()) << inst.error().message;
    ASSERT_TRUE((*inst)->EnableEvents(DefaultExitEvents(), true).ok()) << dir;
    std::set<std::string> enabled;
    for (const auto& e : (*inst)->events()) enabled.insert(e.name);
    for (const std::string& name : expected) EXPECT_TRUE(enabled.count(name)) << dir << ": " << name << " not enabled";
    EXPECT_TRUE(enabled.count("kvm_exit") && enabled.count("kvm_entry")) << dir;
    if (std::string(dir) == "nested-arm64-6.1") {
      for (const char* arm64 : {"kvm_wfx_arm64", "kvm_hvc_arm64", "kvm_guest_fault", "kvm_handle_sys_reg",
                                "kvm_sys_access", "kvm_timer_update_irq", "vgic_update_irq_pending"}) {
        EXPECT_TRUE(enabled.count(arm64)) << arm64;
      }
    }
  }
}

TEST(TracefsInstance, NoKvmEventsIsUnavailableNotUsage) {
  FakeTracefs t;  // a kernel without the kvm module: no events/kvm
  auto inst = TracefsInstance::Create(t.root(), 0, FakeTracefs::Ops());
  ASSERT_TRUE(inst.ok()) << inst.error().message;
  Status s = (*inst)->EnableEvents(DefaultExitEvents(), true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().tag, "live.no-kvm-events");
  EXPECT_EQ(s.error().code, kExitUnavailable);
}

TEST(TracefsInstance, PidFilterFollowsForks) {
  FakeTracefs t;
  auto inst = TracefsInstance::Create(t.root(), 0, FakeTracefs::Ops());
  ASSERT_TRUE(inst.ok()) << inst.error().message;
  ASSERT_TRUE((*inst)->FilterPids({1201, 1202}).ok());
  EXPECT_EQ(ReadText(OwnInstance(t) + "/set_event_pid"), "1201 1202 ");
  EXPECT_EQ(ReadText(OwnInstance(t) + "/options/event-fork"), "1");
}

TEST(TracefsInstance, StaleInstancesOfDeadRunsAreRemovedOthersKept) {
  FakeTracefs t;
  const std::string inst = t.root() + "/instances/";
  const std::string dead = inst + "exitscope-" + std::to_string(DeadPid());
  const std::string alive = inst + "exitscope-" + std::to_string(::getppid());
  for (const std::string& d : {dead, alive, inst + "exitscope-notapid", inst + "trace-cmd-4242"}) {
    ASSERT_TRUE(fs::create_directory(d)) << d;
  }
  // Plain rmdir is what the kernel's ops do; the leftover instances here are empty directories.
  auto removed = RemoveStaleInstances(t.root());
  ASSERT_TRUE(removed.ok()) << removed.error().message;
  EXPECT_EQ(*removed, 1);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(alive));  // a running exitscope's instance is not ours to take
  EXPECT_TRUE(fs::exists(inst + "exitscope-notapid"));
  EXPECT_TRUE(fs::exists(inst + "trace-cmd-4242"));  // other tools' instances are never touched
  // Create does the same clean-up first, through its own ops.
  ASSERT_TRUE(fs::create_directory(dead));
  auto created = TracefsInstance::Create(t.root(), 0, FakeTracefs::Ops());
  ASSERT_TRUE(created.ok()) << created.error().message;
  EXPECT_FALSE(fs::exists(dead));
}

// Two runs starting at once both see a dead run's instance; the one whose rmdir comes second gets
// ENODEV (the kernel is freeing it) or ENOENT (freed). That is not an error: the instance is gone.
// Any other failure still is (EBUSY: a reader holds one of its files open).
TEST(TracefsInstance, StaleInstanceRemovedByAnotherRunMeanwhileIsNoError) {
  FakeTracefs t;
  const std::string dead = t.root() + "/instances/exitscope-" + std::to_string(DeadPid());
  ASSERT_TRUE(fs::create_directory(dead));
  const InstanceDirOps raced{nullptr, [](const char* path) {
                               ::rmdir(path);  // the other run's rmdir, first
                               errno = ENODEV;
                               return -1;
                             }};
  auto removed = RemoveStaleInstances(t.root(), raced);
  ASSERT_TRUE(removed.ok()) << removed.error().message;
  EXPECT_EQ(*removed, 0);
  EXPECT_FALSE(fs::exists(dead));
  ASSERT_TRUE(fs::create_directory(dead));
  const InstanceDirOps busy{nullptr, [](const char*) {
                              errno = EBUSY;
                              return -1;
                            }};
  auto failed = RemoveStaleInstances(t.root(), busy);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().tag, "live.tracefs-io");
}

TEST(TracefsInstance, FailedCreateLeavesNoInstanceBehind) {
  FakeTracefs t;
  // Plain mkdir: the directory appears empty (no tracing_on), as on a filesystem that is not tracefs.
  auto inst = TracefsInstance::Create(t.root(), 0, KernelInstanceDirOps());
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.error().tag, "live.tracefs-io");
  EXPECT_FALSE(fs::exists(OwnInstance(t)));
}

}  // namespace
}  // namespace exitscope
