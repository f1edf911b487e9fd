// Which VM a host thread that ran a vCPU belongs to, and how to name that VM. In: TraceMeta (the
// source's thread→process map, comms, trace-cmd GUEST options). Out: a VM id per thread (the process
// id, or the lowest vCPU tid when the process is unknown) and a label that says how it was grouped.
// Assumption: trace.dat and text do not record processes; then QEMU's vCPU threads ("CPU <n>/KVM",
// created in order, so tid − n is the same for one VM) are grouped, never guessed silently.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/trace_meta.h"

namespace exitscope {

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
