// One VM exit as the advisor's rules read it: its handling time and what KVM did while handling it
// (MSR index, port, MMIO address, a trip to the VMM, a page fault). Built by advise/exit_collector
// from the pairer's ExitSample, read by each rule's match and folded into bounded per-rule state
// (advise/exit_summary.h); no AdvisedExit outlives its exit.
#pragma once

#include <cstdint>

#include "decode/exit_reason_codes.h"

namespace exitscope {

struct AdvisedExit {
  uint64_t ts_ns = 0;        // kvm_exit
  bool timed = true;         // paired with its kvm_entry; untimed exits have dur_ns = handling_ns = 0
  uint64_t dur_ns = 0;       // kvm_exit → next kvm_entry on the same thread (HLT: the sleep's length)
  uint64_t handling_ns = 0;  // dur_ns minus the time the vCPU was blocked: what costs and shares use
  int64_t vm = -1;           // VM id (analysis/vm_grouper.h VmId: the VMM process when known)
  int32_t tid = -1;          // host vCPU thread
  int32_t vcpu = -1;
  int32_t cpu = -1;
  Isa isa = Isa::kUnknown;
  uint32_t reason = 0;
  ExitClass exit_class = ExitClass::kOther;
  uint64_t rip = 0, info1 = 0, info2 = 0;
  // What the handling showed (set when the trace has those events).
  bool has_msr = false, msr_write = false;
  uint32_t msr = 0;
  bool has_pio = false, pio_write = false;
  uint32_t port = 0;
  bool has_mmio = false, mmio_write = false, fast_mmio = false;
  uint64_t gpa = 0;
  bool userspace = false;  // kvm_userspace_exit: KVM_RUN returned to the VMM
  uint32_t userspace_reason = 0;
  bool page_fault = false;
  uint64_t fault_addr = 0;
  bool has_apic = false, apic_write = false;
  uint32_t apic_reg = 0;
  // arm64: the trapped system register (kvm_sys_access, or kvm_handle_sys_reg's ESR), a WFE.
  bool has_sysreg = false, sysreg_write = false;
  uint32_t sysreg = 0;  // sys_reg() encoding (decode/arm64_exit_codes.h)
  bool wfe = false;
};

}  // namespace exitscope
