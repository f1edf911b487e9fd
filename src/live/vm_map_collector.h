// Which VMs a recording saw, for the GUEST options `exitscope record` writes into its trace.dat: the
// host threads of the kvm_exit/kvm_entry records on the pages it stores, each resolved once, while
// the VM runs, by ProcVmDirectory (analysis/vm_grouper.h) to its VMM process, VM name, uuid, VMM
// kind and vCPU index (the thread's name, else the record's vcpu_id). Offline reports then name
// VMs as `top` and `serve` do on the live host.
// In: the instance's header_page and event formats, then raw ring-buffer pages. Out: one VM
// (GUEST option fields) per VMM process; a thread whose process could not be read gets none
// (readers group it as before). Record reads a page once it is full, and the partial ones only at
// the end, when a short-lived VMM may be gone: so Scan(), called as record polls, also resolves the
// threads of every running VM (from debugfs kvm/<pid>-<fd>, else the processes holding a kvm-vm
// file) ahead of their pages.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/vm_grouper.h"
#include "format/event_format.h"
#include "model/trace_meta.h"
#include "sources/live/tracefs_instance.h"
#include "sources/tracedat/guest_option.h"
#include "sources/tracedat/ring_buffer_page.h"

namespace exitscope {

class VmMapCollector {
 public:
  VmMapCollector(std::string_view header_page, const std::vector<EnabledEvent>& events, uint32_t page_size,
                 std::string proc_root = "/proc", std::string debugfs_kvm = "/sys/kernel/debug/kvm");
  static std::unique_ptr<VmMapCollector> ForInstance(const TracefsInstance& instance);
  // Whole pages of one CPU, as read from trace_pipe_raw.
  void AddPages(std::span<const uint8_t> pages);
  // Resolves the threads of the VMs running now (ProcVmDirectory::ResolveRunningVms).
  void Scan();
  struct Vm {
    GuestInfo guest;  // trace-cmd's fields: the name and vCPU → tid pairs
    RecordedVm recorded;
  };
  std::vector<Vm> Vms() const;

 private:
  struct ExitEvent {
    const FieldFormat* vcpu_id = nullptr;  // absent on kernels (and ISAs) without it
  };
  struct Thread {
    std::pair<int32_t, uint64_t> vm;  // (pid, start time)
    int32_t vcpu = -1;
    bool exited = false;  // a kvm_exit/kvm_entry of it was on the pages: it goes into the file
  };
  void OnRecord(int32_t tid, const ExitEvent& ev, std::span<const uint8_t> payload);
  std::unordered_map<int32_t, Thread>::iterator Resolve(int32_t tid, int32_t vcpu_id);

  PageLayout layout_;
  uint32_t page_size_;
  std::vector<EventFormat> formats_;
  FieldFormat type_{"common_type", "unsigned short", 0, 2}, pid_{"common_pid", "int", 4, 4};
  std::unordered_map<uint16_t, ExitEvent> exit_events_;  // by event id: kvm_exit, kvm_entry
  ProcVmDirectory dir_;
  RingBufferStats stats_;  // the recording's own reader counts damage; here it is only skipped
  std::unordered_map<int32_t, Thread> threads_;
  std::map<std::pair<int32_t, uint64_t>, LiveVm> vms_;  // as first seen (the directory may forget them)
};

}  // namespace exitscope
