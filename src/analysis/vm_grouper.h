// Which VM a host thread that ran a vCPU belongs to, and how to name that VM. In: TraceMeta (the
// source's thread→process map, comms, trace-cmd GUEST options). Out: a VM id per thread (the process
// id, or the lowest vCPU tid when the process is unknown) and a label that says how it was grouped.
// Assumption: trace.dat and text do not record processes; then QEMU's vCPU threads ("CPU <n>/KVM",
// created in order, so tid − n is the same for one VM) are grouped, never guessed silently.
// On a live host (top, serve) ProcVmDirectory names each VM from its VMM's /proc/<pid>/cmdline
// (kvm_stat's rule for QEMU's -name) and is the only reader of /proc for VM identity.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <unordered_map>
#include <vector>

#include "model/trace_meta.h"

namespace exitscope {

// What a VMM's command line says about its VM.
struct VmmIdentity {
  std::string vmm;   // "qemu", "firecracker", "cloud-hypervisor", "crosvm"; empty: not a known VMM
  std::string name;  // empty: the command line names none
  std::string uuid;  // empty: none given
};

// `cmdline` as /proc/<pid>/cmdline holds it (arguments NUL-separated), `comm` the process name.
VmmIdentity IdentifyVmm(std::string_view cmdline, std::string_view comm);

// The vCPU index a VMM put in its vCPU thread's name, by exact match: QEMU "CPU n/KVM",
// Firecracker "fc_vcpu n", cloud-hypervisor "vcpun", crosvm "crosvm_vcpun"; nothing otherwise.
// `vmm`, when given, is set to the VMM that names its threads so.
std::optional<int32_t> VcpuIndexFromThreadName(std::string_view comm, std::string_view* vmm = nullptr);

// One VM process on a live host.
struct LiveVm {
  int32_t pid = -1;
  uint64_t start_ticks = 0;  // /proc/<pid>/stat starttime: with pid, the key a reused pid cannot fake
  std::string comm;
  VmmIdentity identity;
  std::string domain;  // the name, else the uuid, else "<comm>-<pid>"
  bool alive = true;   // false once the process is gone (or its pid was reused)
};

// The /proc reader for VM identity on this host. Threads and processes are cached by (id, start
// time); Revalidate re-reads each cached start time once (top and serve call it per interval).
// A VMM that exits before its exits are read (a VM of a fraction of a second, read once per
// interval) has no /proc left to name it: the live loops call ResolveRunningVms while they wait.
class ProcVmDirectory {
 public:
  explicit ProcVmDirectory(std::string proc_root = "/proc", std::string debugfs_kvm = "/sys/kernel/debug/kvm")
      : root_(std::move(proc_root)), debugfs_kvm_(std::move(debugfs_kvm)) {}
  // The VM of host thread `tid`; a thread whose process cannot be read is a VM of its own. The
  // reference holds until the next Revalidate.
  const LiveVm& VmOf(int32_t tid);
  // The thread name's vCPU index, else `vcpu_id` (kvm_entry/kvm_exit's, when >= 0), else nothing.
  std::optional<int32_t> VcpuOf(int32_t tid, int32_t vcpu_id);
  // Resolves every thread of the VMs running now (debugfs kvm/<pid>-<fd>, else the processes that
  // hold a kvm-vm file), at most every 50 ms (every 1 s without debugfs); cheap between scans.
  void ResolveRunningVms();
  // Drops threads whose start time changed or which were gone at the previous call as well;
  // marks gone VMs !alive and forgets VMs gone for more than one Revalidate (their series are
  // the aggregator's to keep). A gone thread stays for one call: exits read after it still name it.
  void Revalidate();
  size_t vm_count() const { return vms_.size(); }
  const std::map<std::pair<int32_t, uint64_t>, LiveVm>& vms() const { return vms_; }

 private:
  struct Thread {
    uint64_t start_ticks = 0;
    std::pair<int32_t, uint64_t> vm;
    std::optional<int32_t> vcpu;
    bool gone = false;  // no /proc entry at the last Revalidate
  };
  std::optional<uint64_t> StartTicks(int32_t id) const;
  std::string Read(const std::string& rel) const;
  // `debugfs`: whether debugfs kvm/ can be read (else /proc is searched for VM files).
  std::vector<int32_t> RunningVmPids(bool debugfs) const;
  std::string root_, debugfs_kvm_;
  std::chrono::steady_clock::time_point next_scan_{};
  std::unordered_map<int32_t, Thread> threads_;
  std::map<std::pair<int32_t, uint64_t>, LiveVm> vms_;
};

class VmGrouper {
 public:
  explicit VmGrouper(const TraceMeta& meta);
  int64_t VmId(int32_t tid) const;
  // The vCPU index a GUEST option gives the thread.
  std::optional<int32_t> GuestVcpu(int32_t tid) const;
  // Label of VM `id`; `tids` are the threads of the report that VmId maps to it.
  std::string Label(int64_t id, const std::vector<int32_t>& tids) const;
  // The labels of the VMs `tids` belong to, by VM id: the context block's "vms" of every output.
  std::vector<std::string> Labels(const std::vector<int32_t>& tids) const;
  // A one-word name of the VM of `tid` for flame-graph frames (no spaces or ';'): "qemu-system-x86-4242",
  // a GUEST option's name, "qemu-<id>" for grouped QEMU threads, "<comm>-<tid>" for a lone thread.
  // Threads of one VM get one name, as --by vm groups them.
  std::string FrameLabel(int32_t tid) const;
  // The vCPU index of `tid`: the kernel's vcpu_id when the trace has it (>= 0), else the GUEST
  // option's, else QEMU's thread name "CPU n/KVM"; nothing when none says.
  std::optional<int32_t> VcpuIndex(int32_t tid, int32_t vcpu_id) const;
  // The GUEST option of the VM `tid` belongs to (its uuid and VMM when exitscope record wrote it);
  // nullptr when no option names that VM.
  const GuestInfo* Guest(int32_t tid) const;

 private:
  enum class Kind { kProcess, kGuest, kQemuThreads, kThread };
  struct Vm {
    Kind kind = Kind::kThread;
    int64_t id = 0;
  };
  Vm Resolve(int32_t tid) const;
  std::string Comm(int64_t tid) const;

  const TraceMeta& meta_;
  struct GuestThread {
    size_t guest = 0;  // index in meta_.guests
    int64_t vm_id = 0;
    int32_t vcpu = 0;
  };
  std::map<int32_t, GuestThread> guest_by_tid_;
  mutable std::unordered_map<int32_t, Vm> memo_;
};

}  // namespace exitscope
