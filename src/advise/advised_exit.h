// One VM exit as the advisor's rules read it: its handling time and what KVM did while handling it
// (MSR index, port, MMIO address, a trip to the VMM, a page fault). Built by advise/exit_collector
// from the pairer's ExitSample, read by each rule's match and folded into bounded per-rule state
// (advise/exit_summary.h); no AdvisedExit outlives its exit.
#pragma once

#include <cstdint>

#include "decode/exit_reason_codes.h"

namespace exitscope {

// Fields by size, so the whole is 128 bytes: zeroing one per exit is eight vector stores, where the
// 152 bytes of the order before took a `rep stos` and its start-up cost, ~10 % of the samples of the
// thread that runs advise's collector (issue 18).
struct AdvisedExit {
  uint64_t ts_ns = 0;        // kvm_exit
  uint64_t dur_ns = 0;       // kvm_exit → next kvm_entry on the same thread (HLT: the sleep's length)
  uint64_t handling_ns = 0;  // dur_ns minus the time the vCPU was blocked: what costs and shares use
  int64_t vm = -1;           // VM id (analysis/vm_grouper.h VmId: the VMM process when known)
  uint64_t rip = 0, info1 = 0, info2 = 0;
  // What the handling showed (set when the trace has those events; each value read only under its
  // flag below): the MMIO address, the faulting address.
  uint64_t gpa = 0, fault_addr = 0;
  int32_t tid = -1;  // host vCPU thread
  int32_t vcpu = -1;
  int32_t cpu = -1;
  uint32_t reason = 0;
  uint32_t msr = 0, port = 0, userspace_reason = 0, apic_reg = 0;
  uint32_t sysreg = 0;  // arm64: the trapped system register's sys_reg() encoding (decode/arm64_exit_codes.h)
  bool timed = true;    // paired with its kvm_entry; untimed exits have dur_ns = handling_ns = 0
  Isa isa = Isa::kUnknown;
  ExitClass exit_class = ExitClass::kOther;
  bool has_msr = false, msr_write = false;
  bool has_pio = false, pio_write = false;
  bool has_mmio = false, mmio_write = false, fast_mmio = false;
  bool userspace = false;  // kvm_userspace_exit: KVM_RUN returned to the VMM
  bool page_fault = false;
  bool has_apic = false, apic_write = false;
  // arm64: a trapped system register (kvm_sys_access, or kvm_handle_sys_reg's ESR), a WFE.
  bool has_sysreg = false, sysreg_write = false;
  bool wfe = false;
};
static_assert(sizeof(AdvisedExit) == 128);

}  // namespace exitscope
