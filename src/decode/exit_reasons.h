// Exit-reason names per ISA, spelled as the kernel does: VMX upper case (arch/x86/include/uapi/asm/
// vmx.h), SVM lower case (arch/x86/include/uapi/asm/svm.h, what `perf kvm stat` users see), arm64 as
// perf kvm stat prints it: a TRAP by its exception class (esr.h: "SYS64", "DABT_LOW" …), other exit
// types by name ("IRQ", "SERROR", "ILLEGAL", "HYP_GONE"; decode/arm64_exit_codes.h).
// Unknown codes print as UNKNOWN(0x…), never dropped. Also parses names back (text dialects:
// kernel TP_printk, libtraceevent's kvm plugin "EXIT_NPF"/"EXIT_IOIO", perf kvm's lower case).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/kvm_event.h"

namespace exitscope {

// For VMX the basic reason is the low 16 bits; flag bits (FAILED_VMENTRY …) are appended as
// " FAILED_VMENTRY". SVM codes are full 32-bit (vmgexit codes 0x8000xxxx).
std::string ExitReasonName(Isa isa, uint32_t exit_reason);
std::optional<uint32_t> ExitReasonFromName(Isa isa, std::string_view name);
// What `--reason NAME` selects in each ISA: the name's own code(s), and in the other ISA the
// equivalent reason when one exists (npf <-> EPT_VIOLATION, io <-> IO_INSTRUCTION, hlt <-> HLT,
// msr <-> MSR_READ + MSR_WRITE …). Empty for an ISA without an equivalent (read_cr4 on VMX).
struct ReasonCodes {
  std::vector<uint32_t> vmx, svm, arm64;  // VMX: basic reasons (flags ignored when matching)
  bool known() const { return !vmx.empty() || !svm.empty() || !arm64.empty(); }
  const std::vector<uint32_t>& of(Isa isa) const { return isa == Isa::kSvm ? svm : isa == Isa::kArm64 ? arm64 : vmx; }
  bool Matches(Isa isa, uint32_t exit_reason) const;
};
ReasonCodes ReasonCodesFromName(std::string_view name);

// Guesses the ISA of a reason name alone ("EPT_VIOLATION" → VMX, "npf"/"EXIT_NPF" → SVM).
Isa IsaFromReasonName(std::string_view name);

}  // namespace exitscope
