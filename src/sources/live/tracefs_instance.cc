#include "sources/live/tracefs_instance.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "model/kvm_event.h"

namespace exitscope {
namespace {

// statfs f_type of tracefs (include/uapi/linux/magic.h: TRACEFS_MAGIC).
constexpr long kTracefsMagic = 0x74726163;

bool IsTracefs(const std::string& dir) {
  struct statfs s {};
  if (::statfs(dir.c_str(), &s) != 0) return false;
  return s.f_type == kTracefsMagic;
}

Error PermissionOrIo(const std::string& what, const std::string& path) {
  bool perm = errno == EACCES || errno == EPERM;
  return MakeError(perm ? kExitNoPerm : kExitIoErr, perm ? "live.no-permission" : "live.tracefs-io",
                   what + " " + path + ": " + std::strerror(errno),
                   perm ? "live tracing needs root (or CAP_DAC_OVERRIDE: tracefs is root's, mode 0700): run "
                          "with sudo"
                        : "");
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') out.emplace_back(e->d_name);
    }
    ::closedir(d);
  }
  return out;
}

bool PidAlive(int pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// With the effective credentials: access(2) checks the real uid and drops capabilities, so a
// service holding only CAP_DAC_OVERRIDE (deploy/systemd) would find no event under tracefs's 0700.
bool Exists(const std::string& path) { return ::faccessat(AT_FDCWD, path.c_str(), F_OK, AT_EACCESS) == 0; }

int KernelMakeInstance(const char* path) { return ::mkdir(path, 0750); }
int KernelRemoveInstance(const char* path) { return ::rmdir(path); }

}  // namespace

const InstanceDirOps& KernelInstanceDirOps() {
  static constexpr InstanceDirOps kOps{KernelMakeInstance, KernelRemoveInstance};
  return kOps;
}

std::vector<std::string> DefaultExitEvents() {
  // Every event the decoder models, x86 and arm64 alike (EnableEvents skips those the kernel does
  // not have): written out by hand, the list had only x86's, so a recording on an arm64 host held no
  // WFx, HVC, system-register, guest-fault or timer/vGIC detail.
  std::vector<std::string> events;
  for (int k = static_cast<int>(EventKind::kOther) + 1; k < static_cast<int>(EventKind::kCount); ++k) {
    events.push_back("kvm:" + std::string(EventKindName(static_cast<EventKind>(k))));
  }
  // Not modeled as kinds, read for the RIP a nested guest's entry resumes at.
  events.insert(events.end(), {"kvm:kvm_nested_vmexit", "kvm:kvm_nested_vmenter"});
  return events;
}

std::vector<std::string> TimingExitEvents() {
  return {"kvm:kvm_exit",        "kvm:kvm_entry",         "kvm:kvm_userspace_exit", "kvm:kvm_emulate_insn",
          "kvm:kvm_vcpu_wakeup", "kvm:kvm_nested_vmexit", "kvm:kvm_nested_vmenter"};
}

Status CheckTracefs(const std::string& dir) {
  if (IsTracefs(dir)) return Status::Ok();
  return MakeError(kExitUnavailable, "live.no-tracefs", "'" + dir + "' is not a tracefs mount",
                   "give the tracefs mount point (usually /sys/kernel/tracing; `mount -t tracefs nodev "
                   "/sys/kernel/tracing` mounts it), or omit --tracefs to find it");
}

Result<std::string> FindTracefs() {
  for (const char* dir : {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"}) {
    if (IsTracefs(dir)) return std::string(dir);
  }
  std::ifstream mounts("/proc/mounts");
  std::string dev, dir, type, rest;
  while (mounts >> dev >> dir >> type && std::getline(mounts, rest)) {
    if (type == "tracefs") return dir;
  }
  return MakeError(kExitUnavailable, "live.no-tracefs", "tracefs is not mounted",
                   "mount it: mount -t tracefs nodev /sys/kernel/tracing");
}

Result<int> RemoveStaleInstances(const std::string& tracefs, const InstanceDirOps& ops) {
  int removed = 0;
  for (const auto& name : ListDir(tracefs + "/instances")) {
    if (name.rfind(kInstancePrefix, 0) != 0) continue;
    int pid = std::atoi(name.c_str() + kInstancePrefix.size());
    if (pid <= 0 || PidAlive(pid)) continue;
    // rmdir frees the instance with its buffers, events and filters (kernel/trace/trace.c
    // instance_rmdir); it fails with EBUSY only while a reader still holds a file open.
    std::string dir = tracefs + "/instances/" + name;
    if (ops.remove(dir.c_str()) != 0) {
      // Another run cleaning up at the same moment got there first: the kernel answers ENODEV for
      // an instance already being freed, ENOENT once it is gone. Gone is what was wanted.
      if (errno == ENODEV || errno == ENOENT) continue;
      return PermissionOrIo("cannot remove stale instance", dir);
    }
    ++removed;
  }
  return removed;
}

Result<std::vector<int>> ThreadsOf(int pid) {
  std::string dir = "/proc/" + std::to_string(pid) + "/task";
  std::vector<int> tids;
  for (const auto& t : ListDir(dir)) tids.push_back(std::atoi(t.c_str()));
  if (tids.empty()) {
    return MakeError(kExitNoInput, "live.no-such-pid", "no process " + std::to_string(pid),
                     "pass the pid of the VMM (QEMU) process of the VM: pgrep -f qemu");
  }
  return tids;
}

Result<std::unique_ptr<TracefsInstance>> TracefsInstance::Create(const std::string& tracefs, uint32_t buffer_size_kb,
                                                                 const InstanceDirOps& ops) {
  auto stale = RemoveStaleInstances(tracefs, ops);
  if (!stale.ok()) return stale.error();
  std::unique_ptr<TracefsInstance> inst(new TracefsInstance());
  inst->tracefs_ = tracefs;
  inst->ops_ = ops;
  inst->dir_ = tracefs + "/instances/" + std::string(kInstancePrefix) + std::to_string(::getpid());
  if (ops.make(inst->dir_.c_str()) != 0) {
    if (errno == EEXIST) {  // our own pid from an earlier run in a reused pid namespace
      ops.remove(inst->dir_.c_str());
      if (ops.make(inst->dir_.c_str()) != 0) return PermissionOrIo("cannot create", inst->dir_);
    } else {
      inst->removed_ = true;
      return PermissionOrIo("cannot create tracefs instance", inst->dir_);
    }
  }
  // A new instance starts with tracing on: off until the caller has enabled what it needs.
  if (Status s = inst->SetTracingOn(false); !s) return s.error();
  // Our own pid is NOT put in set_event_notrace_pid: the kernel ignores every event on a CPU while
  // a listed task is current there (kernel/trace/trace_events.c: the per-CPU ignore_pid flag set at
  // sched_switch), interrupt-context ones included. An arm64 KVM host lost 3 of 16,412 kvm events
  // that way (kvm_timer_update_irq and vgic injections in the timer interrupt, taken while the
  // recorder ran), with nothing counted anywhere. Our own sched/syscall events, when those are
  // recorded, are what the machine did.
  if (buffer_size_kb) {
    if (Status s = inst->Write("buffer_size_kb", std::to_string(buffer_size_kb)); !s) return s.error();
  }
  for (const auto& e : ListDir(inst->dir_ + "/per_cpu")) {
    if (e.rfind("cpu", 0) == 0) inst->cpu_count_ = std::max(inst->cpu_count_, std::atoi(e.c_str() + 3) + 1);
  }
  // The sub-buffer (page) size is header_page's data offset + size (kernel/trace/ring_buffer.c
  // ring_buffer_print_page_header): 4096 unless buffer_subbuf_size_kb changed it (6.8+).
  if (auto hp = inst->Read("events/header_page", true); hp.ok()) {
    size_t at = hp->find("char data;");
    unsigned off = 0, size = 0;
    if (at != std::string::npos &&
        std::sscanf(hp->c_str() + at, "char data;\toffset:%u;\tsize:%u;", &off, &size) == 2) {
      inst->page_size_ = off + size;
    }
  }
  return inst;
}

TracefsInstance::~TracefsInstance() { (void)Remove(); }

Status TracefsInstance::Remove() {
  if (removed_) return {};
  removed_ = true;
  (void)Write("tracing_on", "0");
  (void)Write("events/enable", "0");
  if (ops_.remove(dir_.c_str()) != 0 && errno != ENOENT) return PermissionOrIo("cannot remove", dir_);
  return {};
}

Status TracefsInstance::Write(const std::string& rel, const std::string& value, bool append) const {
  std::string path = dir_ + "/" + rel;
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | (append ? O_APPEND : O_TRUNC));
  if (fd < 0) return PermissionOrIo("cannot open", path);
  ssize_t n = ::write(fd, value.data(), value.size());
  int err = errno;
  ::close(fd);
  if (n != static_cast<ssize_t>(value.size())) {
    errno = err;
    return PermissionOrIo("cannot write '" + value + "' to", path);
  }
  return {};
}

Result<std::string> TracefsInstance::Read(const std::string& rel, bool top) const {
  std::string path = (top ? tracefs_ : dir_) + "/" + rel;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return PermissionOrIo("cannot open", path);
  std::string out;
  char buf[65536];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

Status TracefsInstance::EnableEvents(const std::vector<std::string>& events, bool skip_missing) {
  for (const auto& spec : events) {
    size_t colon = spec.find(':');
    std::string system = colon == std::string::npos ? "kvm" : spec.substr(0, colon);
    std::string name = colon == std::string::npos ? spec : spec.substr(colon + 1);
    std::string sysdir = tracefs_ + "/events/" + system;
    std::vector<std::string> names;
    if (name == "*") {
      for (const auto& e : ListDir(sysdir)) {
        if (e != "enable" && e != "filter") names.push_back(e);
      }
    } else {
      names.push_back(name);
    }
    if (names.empty() || !Exists(sysdir)) {
      if (system == "kvm") {
        return MakeError(kExitUnavailable, "live.no-kvm-events",
                         "this kernel has no kvm trace events (" + sysdir + " is missing)",
                         "load the kvm module: modprobe kvm_intel (or kvm_amd)");
      }
      return MakeError(kExitUsage, "live.no-such-event", "no trace event system '" + system + "'",
                       "list them: ls " + tracefs_ + "/events");
    }
    for (const auto& n : names) {
      std::string rel = "events/" + system + "/" + n;
      if (!Exists(dir_ + "/" + rel)) {
        if (skip_missing) continue;
        return MakeError(kExitUsage, "live.no-such-event", "no trace event " + system + ":" + n,
                         "list them: ls " + tracefs_ + "/events/" + system);
      }
      auto format = Read(rel + "/format");
      if (!format.ok()) return format.error();
      if (Status s = Write(rel + "/enable", "1"); !s) return s;
      events_.push_back({system, n, std::move(*format)});
    }
  }
  if (events_.empty()) {
    return MakeError(kExitUnavailable, "live.no-kvm-events", "none of the requested events exist",
                     "load the kvm module: modprobe kvm_intel (or kvm_amd)");
  }
  return {};
}

Status TracefsInstance::FilterPids(const std::vector<int>& tids) {
  std::string list;
  for (int t : tids) list += std::to_string(t) + " ";
  if (Status s = Write("set_event_pid", list); !s) return s;
  // vCPU threads started later are children of the VMM's threads: follow forks.
  (void)Write("options/event-fork", "1");
  return {};
}

Status TracefsInstance::SetTracingOn(bool on) { return Write("tracing_on", on ? "1" : "0"); }

}  // namespace exitscope
