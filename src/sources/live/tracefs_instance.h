// Our own tracefs instance (instances/exitscope-<pid>), so that live recording never touches the
// top-level buffer, its events, filters or tracing_on that kvm_stat, trace-cmd or perf users rely on.
// In: the events to enable ("kvm:kvm_exit" or "kvm_exit"), an optional pid filter.
// Out: an instance directory whose per_cpu/cpuN/trace_pipe_raw the page reader drains; on
// destruction the events are disabled and the directory removed, leaving the host as it was.
// Key assumption: an instance named exitscope-<pid> belongs to that process; when the pid is dead
// (the previous run got SIGKILL) the instance is ours to remove.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace exitscope {

inline constexpr std::string_view kInstancePrefix = "exitscope-";

// The kvm events that describe exits and their causes: every event the decoder models, x86's
// (arch/x86/kvm/trace.h) and arm64's (arch/arm64/kvm/trace_arm.h, trace_handle_exit.h,
// vgic/trace.h), and virt/kvm's; those the running kernel lacks are skipped.
std::vector<std::string> DefaultExitEvents();
// The events that pairing and timing need, without the per-exit detail events (MSR index, port,
// MMIO address, CR, CPUID leaf, APIC …): what `top` and `serve` enable, since they show no details
// and each enabled event is one more ring-buffer record the kernel writes, and they decode, per exit.
// kvm_userspace_exit (trips to the VMM), kvm_emulate_insn and the nested pair (which RIP an entry
// resumes at), kvm_vcpu_wakeup (a halted vCPU's wait) stay.
std::vector<std::string> TimingExitEvents();

// Where tracefs is mounted (/sys/kernel/tracing, or debugfs's tracing/ on old kernels).
Result<std::string> FindTracefs();
// A --tracefs given by the user: 69 with a hint when `dir` is not a tracefs mount.
Status CheckTracefs(const std::string& dir);

// How instance directories come and go: mkdir/rmdir on tracefs, where the kernel fills a new one
// with its control files and frees a removed one whole (kernel/trace/trace.c instance_mkdir,
// instance_rmdir). Tests pass functions that do the same to a plain directory.
struct InstanceDirOps {
  int (*make)(const char* path);    // 0, or -1 with errno set, as mkdir(2)
  int (*remove)(const char* path);  // as rmdir(2)
};
const InstanceDirOps& KernelInstanceDirOps();

// Removes instances/exitscope-<pid> whose pid is no longer running. Returns how many were removed.
Result<int> RemoveStaleInstances(const std::string& tracefs, const InstanceDirOps& ops = KernelInstanceDirOps());

struct EnabledEvent {
  std::string system, name;
  std::string format;  // events/<system>/<name>/format text
};

class TracefsInstance {
 public:
  ~TracefsInstance();
  TracefsInstance(const TracefsInstance&) = delete;
  TracefsInstance& operator=(const TracefsInstance&) = delete;

  // Cleans stale instances of ours, then creates instances/exitscope-<getpid()> with tracing off.
  static Result<std::unique_ptr<TracefsInstance>> Create(const std::string& tracefs, uint32_t buffer_size_kb,
                                                         const InstanceDirOps& ops = KernelInstanceDirOps());
  // Enables each event ("sys:name", "name" = kvm:name, or "sys:*"). Events that do not exist are
  // errors unless `skip_missing` (the default list spans kernel versions).
  Status EnableEvents(const std::vector<std::string>& events, bool skip_missing);
  // Traces only these threads and their future children (options/event-fork).
  Status FilterPids(const std::vector<int>& tids);
  Status SetTracingOn(bool on);
  // Disables events and removes the instance (also done by the destructor); idempotent.
  Status Remove();

  const std::string& dir() const { return dir_; }
  const std::string& tracefs() const { return tracefs_; }
  const std::vector<EnabledEvent>& events() const { return events_; }
  int cpu_count() const { return cpu_count_; }
  uint32_t page_size() const { return page_size_; }
  // A file of the instance ("per_cpu/cpu0/stats") or, with `top`, of the tracefs root.
  Result<std::string> Read(const std::string& rel, bool top = false) const;

 private:
  TracefsInstance() = default;
  Status Write(const std::string& rel, const std::string& value, bool append = false) const;

  std::string tracefs_, dir_;
  InstanceDirOps ops_ = KernelInstanceDirOps();
  std::vector<EnabledEvent> events_;
  int cpu_count_ = 0;
  uint32_t page_size_ = 4096;
  bool removed_ = false;
};

// Every thread of process `pid` (/proc/<pid>/task), for -p: vCPUs are threads of the VMM.
Result<std::vector<int>> ThreadsOf(int pid);

}  // namespace exitscope
