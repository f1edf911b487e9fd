// One timed VM exit: a kvm_exit paired with the next kvm_entry of the same host thread, with the
// detail events (kvm_msr, kvm_pio, kvm_userspace_exit …) seen on that thread in between.
// In: built by analysis/exit_pairer. Out: consumed one at a time by trackers (never stored in bulk).
// Assumption: an exit carries few details; past kMaxDetails we count the overflow, not store it.
#pragma once

#include <array>
#include <cstdint>

#include "model/kvm_event.h"

namespace exitscope {

struct ExitDetail {
  EventKind kind = EventKind::kOther;
  bool write = false;   // kMsr/kPio/kCr: write/out; kMmio: type == write
  bool failed = false;  // kMsr: the access raised #GP
  uint32_t size = 0;    // kPio/kMmio: bytes; kCr: cr number; kMmio: KVM_TRACE_MMIO_* type in aux
  uint32_t aux = 0;     // kMmio: KVM_TRACE_MMIO_* type; kPio: rep count; kHvcArm64: immediate;
                        // kGuestFault: Arm64FaultAccess
  uint64_t key = 0;     // kMsr: index; kPio: port; kMmio/kFastMmio: gpa; kHypercall: nr;
                        // kSysReg/kHandleSysReg: sys_reg() encoding; kHvcArm64: r0; kWfx: is_wfe;
                        // kGuestFault: IPA;
                        // kUserspaceExit: KVM_EXIT_*; kPageFault: fault address
};

struct ExitSample {
  int32_t tid = -1;
  int32_t vcpu_id = -1;
  int32_t exit_cpu = -1;
  int32_t entry_cpu = -1;
  Isa isa = Isa::kUnknown;
  uint32_t reason = 0;  // raw exit_reason (VMX flags included)
  uint64_t ts_ns = 0;   // of the kvm_exit
  uint64_t dur_ns = 0;  // kvm_entry.ts - kvm_exit.ts
  // The part of dur_ns the vCPU was blocked (HLT/MWAIT waiting for work, not the host handling the
  // exit): set by the pairer; handling_ns() is what totals, %TIME and the advisor's costs use.
  uint64_t blocked_ns = 0;
  uint64_t rip = 0;
  uint64_t info1 = 0, info2 = 0;
  uint32_t intr_info = 0;         // kvm_exit's intr_info (VMX VM-exit interruption information)
  bool to_userspace = false;      // a kvm_userspace_exit was seen: the VMM handled (part of) it
  uint32_t userspace_reason = 0;  // KVM_EXIT_* of the first kvm_userspace_exit
  uint8_t detail_count = 0;
  uint8_t details_dropped = 0;  // details past kMaxDetails
  static constexpr int kMaxDetails = 6;
  std::array<ExitDetail, kMaxDetails> details{};

  uint64_t handling_ns() const { return dur_ns - blocked_ns; }
};

}  // namespace exitscope
