// The typed KVM events every source produces and every analysis consumes.
// In: binary sources (trace.dat, perf.data) through decode/kvm_decoder, text sources directly.
// Out: one KvmEvent per kvm tracepoint hit, in time order. Only the fields its kind uses are set.
// Assumption: tid is the host thread (a vCPU thread for exit/entry); ts_ns is nanoseconds in the
// trace's clock domain after any TSC→ns conversion.
#pragma once

#include <cstdint>
#include <string_view>

namespace exitscope {

// kArm64: detected from the trace's kvm_exit format (its `esr_ec` field), not from a kvm_exit field.
enum class Isa : uint8_t { kUnknown = 0, kVmx = 1, kSvm = 2, kArm64 = 3 };

// kvm_exit's `isa` field values (arch/x86/kvm/trace.h: KVM_ISA_VMX = 1, KVM_ISA_SVM = 2).
inline constexpr uint32_t kKvmIsaVmx = 1;
inline constexpr uint32_t kKvmIsaSvm = 2;

enum class EventKind : uint8_t {
  kOther = 0,      // a kvm event we do not model; counted, shown by dump
  kExit,           // kvm_exit
  kEntry,          // kvm_entry
  kMsr,            // kvm_msr
  kPio,            // kvm_pio
  kMmio,           // kvm_mmio
  kCr,             // kvm_cr
  kHypercall,      // kvm_hypercall
  kUserspaceExit,  // kvm_userspace_exit
  kPageFault,      // kvm_page_fault
  kEmulateInsn,    // kvm_emulate_insn
  kFastMmio,       // kvm_fast_mmio
  kCpuid,          // kvm_cpuid
  kApicIpi,        // kvm_apic_ipi
  kApic,           // kvm_apic (APIC register access)
  kInjVirq,        // kvm_inj_virq
  kHaltPoll,       // kvm_halt_poll_ns
  kVcpuWakeup,     // kvm_vcpu_wakeup
  // arm64 (arch/arm64/kvm/trace_arm.h, trace_handle_exit.h, vgic/trace.h)
  kSysReg,        // kvm_sys_access: a trapped system-register access, by encoding
  kHandleSysReg,  // kvm_handle_sys_reg: the same trap's ESR (older kernels lack kvm_sys_access)
  kHvcArm64,      // kvm_hvc_arm64
  kWfx,           // kvm_wfx_arm64
  kGuestFault,    // kvm_guest_fault: a stage-2 abort (data or instruction) at an IPA
  kTimerIrq,      // kvm_timer_update_irq
  kVgicIrq,       // vgic_update_irq_pending
  kCount,
};

std::string_view EventKindName(EventKind k);

// Fields per kind. Unset optional-ish numeric fields are 0; vcpu_id is -1 when the trace lacks it.
struct KvmEvent {
  uint64_t ts_ns = 0;
  int32_t cpu = -1;
  int32_t tid = -1;
  EventKind kind = EventKind::kOther;
  Isa isa = Isa::kUnknown;  // kExit: from the isa field, else the trace's CPU vendor
  bool write = false;       // kMsr/kPio/kMmio/kCr: write (or out); kMsr: also `failed` via aux
  int32_t vcpu_id = -1;     // kExit/kEntry when the kernel records it
  uint32_t reason = 0;      // kExit: raw exit_reason (arm64: decode/arm64_exit_codes.h Arm64ExitKey);
                            // kUserspaceExit: KVM_EXIT_*; kHypercall: nr low bits
  uint32_t size = 0;        // kPio/kMmio: access size; kCr: cr number
  uint64_t rip = 0;         // kExit/kEntry: guest rip; kEmulateInsn/kPageFault: rip when known
  uint64_t info1 = 0;       // kExit: info1/exit_info1 (arm64: esr_ec); kMsr: MSR index; kPio: port;
                            // kMmio: gpa; kHypercall: nr; kPageFault: fault address; kFastMmio: gpa;
                            // kSysReg/kHandleSysReg: sys_reg() encoding; kHvcArm64: r0;
                            // kGuestFault: ipa; kTimerIrq/kVgicIrq: irq
  uint64_t info2 = 0;       // kExit: info2 (arm64: ret); kMsr/kPio/kMmio/kCr: data value; kPageFault:
                            // error code; kHvcArm64: imm; kGuestFault/kHandleSysReg: ESR (hsr)
  uint32_t intr_info = 0;   // kExit
  uint32_t error_code = 0;  // kExit; kMsr: 1 when the access failed (#GP); kUserspaceExit: errno
  uint32_t count = 0;       // kPio: rep count; kApicIpi: icr_low
  uint32_t aux =
      0;  // kMmio: KVM_TRACE_MMIO_* type; kApic: reg; kApicIpi: dest id; kEntry: guest_mode + 1 (0: not recorded);
          // kVcpuWakeup: waited kWfx: is_wfe; kGuestFault: Arm64FaultAccess; kTimerIrq/kVgicIrq: level
};

inline constexpr std::string_view kIsaNames[] = {"unknown", "vmx", "svm", "arm64"};
inline std::string_view IsaName(Isa isa) { return kIsaNames[static_cast<int>(isa)]; }

}  // namespace exitscope
