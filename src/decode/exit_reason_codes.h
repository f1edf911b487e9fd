// The raw exit-reason codes that advisor rules and exit-site matching key on. Names for display come
// from decode/exit_reasons.h; these are only the handful of numbers the rules need to compare against.
// VMX: arch/x86/include/uapi/asm/vmx.h (basic reason, low 16 bits). SVM: arch/x86/include/uapi/asm/svm.h.
// arm64: its own table, decode/arm64_exit_codes.h (esr.h exception classes, kvm_asm.h exit types).
#pragma once

#include <cstdint>
#include <string_view>

#include "decode/arm64_exit_codes.h"
#include "model/kvm_event.h"

namespace exitscope {

inline constexpr uint32_t kVmxBasicReasonMask = 0xffff;  // vmx.h: bits 31..16 are flags
// vmx.h VMX_EXIT_REASONS_FAILED_VMENTRY: the entry failed; the qualification describes that failure.
inline constexpr uint32_t kVmxFailedVmentry = 0x80000000u;
// vmx.h EXIT_REASON_*
inline constexpr uint32_t kVmxExceptionNmi = 0;
inline constexpr uint32_t kVmxExternalInterrupt = 1;
inline constexpr uint32_t kVmxTripleFault = 2;
inline constexpr uint32_t kVmxInitSignal = 3;
inline constexpr uint32_t kVmxSipiSignal = 4;
inline constexpr uint32_t kVmxTaskSwitch = 9;
inline constexpr uint32_t kVmxCpuid = 10;
inline constexpr uint32_t kVmxHlt = 12;
inline constexpr uint32_t kVmxRdpmc = 15;
inline constexpr uint32_t kVmxVmclear = 19;
inline constexpr uint32_t kVmxVmlaunch = 20;
inline constexpr uint32_t kVmxVmresume = 24;
inline constexpr uint32_t kVmxVmon = 27;
inline constexpr uint32_t kVmxCrAccess = 28;
inline constexpr uint32_t kVmxDrAccess = 29;
inline constexpr uint32_t kVmxIoInstruction = 30;
inline constexpr uint32_t kVmxMsrRead = 31;
inline constexpr uint32_t kVmxMsrWrite = 32;
inline constexpr uint32_t kVmxInvalidState = 33;
inline constexpr uint32_t kVmxMsrLoadFail = 34;
inline constexpr uint32_t kVmxPauseInstruction = 40;
inline constexpr uint32_t kVmxMceDuringVmentry = 41;
inline constexpr uint32_t kVmxApicAccess = 44;
inline constexpr uint32_t kVmxEoiInduced = 45;
inline constexpr uint32_t kVmxEptViolation = 48;
inline constexpr uint32_t kVmxEptMisconfig = 49;
inline constexpr uint32_t kVmxInvept = 50;
inline constexpr uint32_t kVmxPreemptionTimer = 52;
inline constexpr uint32_t kVmxInvvpid = 53;
inline constexpr uint32_t kVmxApicWrite = 56;
// svm.h SVM_EXIT_*
inline constexpr uint32_t kSvmReadCr0 = 0x000;   // .. 0x00f read_cr0..15
inline constexpr uint32_t kSvmWriteCr0 = 0x010;  // .. 0x01f write_cr0..15
inline constexpr uint32_t kSvmReadDr0 = 0x020;   // .. 0x02f read_dr0..15
inline constexpr uint32_t kSvmWriteDr0 = 0x030;  // .. 0x03f write_dr0..15
inline constexpr uint32_t kSvmDrCount = 16;
inline constexpr uint32_t kSvmExcp0 = 0x040;  // .. 0x05f excp0..31 (+ vector)
inline constexpr uint32_t kSvmIntr = 0x060;
inline constexpr uint32_t kSvmNmi = 0x061;
inline constexpr uint32_t kSvmInit = 0x063;
inline constexpr uint32_t kSvmCr0SelWrite = 0x065;
inline constexpr uint32_t kSvmRdpmc = 0x06f;
inline constexpr uint32_t kSvmCpuid = 0x072;
inline constexpr uint32_t kSvmRsm = 0x073;
inline constexpr uint32_t kSvmPause = 0x077;
inline constexpr uint32_t kSvmHlt = 0x078;
inline constexpr uint32_t kSvmIoio = 0x07b;
inline constexpr uint32_t kSvmMsr = 0x07c;
inline constexpr uint32_t kSvmTaskSwitch = 0x07d;
inline constexpr uint32_t kSvmShutdown = 0x07f;
inline constexpr uint32_t kSvmVmrun = 0x080;
inline constexpr uint32_t kSvmVmload = 0x082;
inline constexpr uint32_t kSvmClgi = 0x085;
inline constexpr uint32_t kSvmNpf = 0x400;
inline constexpr uint32_t kSvmAvicIncompleteIpi = 0x401;
inline constexpr uint32_t kSvmAvicUnaccelerated = 0x402;
inline constexpr uint32_t kSvmVmgexit = 0x403;
inline constexpr uint32_t kSvmErr = 0xffffffff;       // SVM_EXIT_ERR (-1): VMRUN failed
inline constexpr uint32_t kSvmSevCodes = 0x80000000;  // SVM_VMGEXIT_* software exit codes from here

// Exit causes by meaning, across ISAs; what rules and exit-site matching ask for.
enum class ExitClass : uint8_t {
  kOther,
  kHlt,
  kMsrRead,
  kMsrWrite,
  kMsr /* SVM: direction in exit_info1 */,
  kCpuid,
  kIo,
  kDr,
  kPageFault /* EPT violation / NPF */,
  kMmioFault /* EPT misconfig: KVM's MMIO fast path */,
  kExternalInterrupt,
  kPause,
  kApicWrite,
  kApicAccess,
  kRdpmc,
  kPreemptionTimer,
  kSysReg /* arm64 SYS64: a trapped MRS/MSR or system instruction */,
  kHypercall /* arm64 HVC64/SMC64 */,
};

inline constexpr std::string_view kExitClassNames[] = {"other",
                                                       "HLT",
                                                       "MSR read",
                                                       "MSR write",
                                                       "MSR",
                                                       "CPUID",
                                                       "port IO",
                                                       "debug register",
                                                       "EPT violation/NPF",
                                                       "MMIO (EPT misconfig)",
                                                       "external interrupt",
                                                       "PAUSE",
                                                       "APIC write",
                                                       "APIC access",
                                                       "RDPMC",
                                                       "preemption timer",
                                                       "system register",
                                                       "HVC/SMC"};
inline std::string_view ExitClassName(ExitClass c) { return kExitClassNames[static_cast<int>(c)]; }
// The same in the words of the exits' ISA: an arm64 vCPU halts with WFI/WFE and faults at stage 2.
inline std::string_view ExitClassName(ExitClass c, Isa isa) {
  if (isa == Isa::kArm64 && c == ExitClass::kHlt) return "WFx";
  if (isa == Isa::kArm64 && c == ExitClass::kPageFault) return "stage-2 abort";
  return ExitClassName(c);
}
// What a halted vCPU executed, in those words.
inline std::string_view HaltName(Isa isa) { return ExitClassName(ExitClass::kHlt, isa); }

inline ExitClass ClassifyExit(Isa isa, uint32_t reason) {
  if (isa == Isa::kVmx) {
    switch (reason & kVmxBasicReasonMask) {
      case kVmxExternalInterrupt: return ExitClass::kExternalInterrupt;
      case kVmxCpuid: return ExitClass::kCpuid;
      case kVmxHlt: return ExitClass::kHlt;
      case kVmxRdpmc: return ExitClass::kRdpmc;
      case kVmxDrAccess: return ExitClass::kDr;
      case kVmxIoInstruction: return ExitClass::kIo;
      case kVmxMsrRead: return ExitClass::kMsrRead;
      case kVmxMsrWrite: return ExitClass::kMsrWrite;
      case kVmxPauseInstruction: return ExitClass::kPause;
      case kVmxApicAccess: return ExitClass::kApicAccess;
      case kVmxEptViolation: return ExitClass::kPageFault;
      case kVmxEptMisconfig: return ExitClass::kMmioFault;
      case kVmxPreemptionTimer: return ExitClass::kPreemptionTimer;
      case kVmxApicWrite: return ExitClass::kApicWrite;
      default: return ExitClass::kOther;
    }
  }
  if (isa == Isa::kSvm) {
    if (reason >= kSvmReadDr0 && reason < kSvmWriteDr0 + kSvmDrCount) return ExitClass::kDr;
    switch (reason) {
      case kSvmIntr: return ExitClass::kExternalInterrupt;
      case kSvmRdpmc: return ExitClass::kRdpmc;
      case kSvmCpuid: return ExitClass::kCpuid;
      case kSvmPause: return ExitClass::kPause;
      case kSvmHlt: return ExitClass::kHlt;
      case kSvmIoio: return ExitClass::kIo;
      case kSvmMsr: return ExitClass::kMsr;
      case kSvmNpf: return ExitClass::kPageFault;
      case kSvmAvicIncompleteIpi: return ExitClass::kApicWrite;
      case kSvmAvicUnaccelerated: return ExitClass::kApicAccess;
      default: return ExitClass::kOther;
    }
  }
  if (isa == Isa::kArm64) {
    switch (reason) {
      case kArm64ExitIrq: return ExitClass::kExternalInterrupt;
      case kEsrEcWfx: return ExitClass::kHlt;  // WFI (and WFE: kvm_wfx_arm64 tells them apart)
      case kEsrEcSys64: return ExitClass::kSysReg;
      case kEsrEcHvc64:
      case kEsrEcSmc64: return ExitClass::kHypercall;
      // Stage-2 aborts: a fault on unmapped guest memory, or MMIO (then kvm_mmio follows).
      case kEsrEcDabtLow:
      case kEsrEcIabtLow: return ExitClass::kPageFault;
      default: return ExitClass::kOther;
    }
  }
  return ExitClass::kOther;
}

}  // namespace exitscope
