// The raw exit-reason codes that advisor rules and exit-site matching key on. Names for display come
// from decode/exit_reasons.h; these are only the handful of numbers the rules need to compare against.
// VMX: arch/x86/include/uapi/asm/vmx.h (basic reason, low 16 bits). SVM: arch/x86/include/uapi/asm/svm.h.
#pragma once

#include <cstdint>
#include <string_view>

#include "model/kvm_event.h"

namespace exitscope {

inline constexpr uint32_t kVmxBasicReasonMask = 0xffff;  // vmx.h: bits 31..16 are flags
// vmx.h EXIT_REASON_*
inline constexpr uint32_t kVmxExternalInterrupt = 1;
inline constexpr uint32_t kVmxCpuid = 10;
inline constexpr uint32_t kVmxHlt = 12;
inline constexpr uint32_t kVmxRdpmc = 15;
inline constexpr uint32_t kVmxDrAccess = 29;
inline constexpr uint32_t kVmxIoInstruction = 30;
inline constexpr uint32_t kVmxMsrRead = 31;
inline constexpr uint32_t kVmxMsrWrite = 32;
inline constexpr uint32_t kVmxPauseInstruction = 40;
inline constexpr uint32_t kVmxApicAccess = 44;
inline constexpr uint32_t kVmxEptViolation = 48;
inline constexpr uint32_t kVmxEptMisconfig = 49;
inline constexpr uint32_t kVmxPreemptionTimer = 52;
inline constexpr uint32_t kVmxApicWrite = 56;
// svm.h SVM_EXIT_*
inline constexpr uint32_t kSvmReadDr0 = 0x020;   // .. 0x02f read_dr0..15
inline constexpr uint32_t kSvmWriteDr0 = 0x030;  // .. 0x03f write_dr0..15
inline constexpr uint32_t kSvmDrCount = 16;
inline constexpr uint32_t kSvmIntr = 0x060;
inline constexpr uint32_t kSvmRdpmc = 0x06f;
inline constexpr uint32_t kSvmCpuid = 0x072;
inline constexpr uint32_t kSvmPause = 0x077;
inline constexpr uint32_t kSvmHlt = 0x078;
inline constexpr uint32_t kSvmIoio = 0x07b;
inline constexpr uint32_t kSvmMsr = 0x07c;
inline constexpr uint32_t kSvmNpf = 0x400;
inline constexpr uint32_t kSvmAvicIncompleteIpi = 0x401;
inline constexpr uint32_t kSvmAvicUnaccelerated = 0x402;

// Exit causes by meaning, across ISAs; what rules and exit-site matching ask for.
enum class ExitClass : uint8_t {
  kOther, kHlt, kMsrRead, kMsrWrite, kMsr /* SVM: direction in exit_info1 */, kCpuid, kIo, kDr,
  kPageFault /* EPT violation / NPF */, kMmioFault /* EPT misconfig: KVM's MMIO fast path */, kExternalInterrupt, kPause, kApicWrite,
  kApicAccess, kRdpmc, kPreemptionTimer,
};

inline constexpr std::string_view kExitClassNames[] = {
    "other", "HLT", "MSR read", "MSR write", "MSR", "CPUID", "port IO", "debug register",
    "EPT violation/NPF", "MMIO (EPT misconfig)", "external interrupt", "PAUSE", "APIC write",
    "APIC access", "RDPMC", "preemption timer"};
inline std::string_view ExitClassName(ExitClass c) { return kExitClassNames[static_cast<int>(c)]; }

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
  return ExitClass::kOther;
}

}  // namespace exitscope
