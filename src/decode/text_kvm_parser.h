// The bodies of kvm tracepoint lines, as the kernel's TP_printk (old and new kvm_exit layouts) and
// libtraceevent's kvm plugin (trace-cmd report: "reason EXIT_NPF rip 0x… info A B") print them,
// into KvmEvent fields. One small handler per event name, in a table.
// In: event name and body of a TextLine. Out: a KvmEvent (kind kOther for kvm events not modeled).
// arm64's kvm_exit ("TRAP: HSR_EC: 0x0018 (SYS64), PC: 0x…") and its detail events too.
// Assumption: reason names are spelled as the kernel or libtraceevent print them; the ISA comes from
// the name when it tells (npf, EXIT_NPF → SVM; EPT_VIOLATION → VMX), else from earlier lines.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "model/diagnostics.h"
#include "model/kvm_event.h"

namespace exitscope {

class TextKvmParser {
 public:
  explicit TextKvmParser(Diagnostics* diagnostics) : diagnostics_(diagnostics) {}
  // False when the body does not parse as that event's text (the caller counts the line).
  bool Parse(std::string_view event, std::string_view body, KvmEvent* out);
  Isa isa() const { return isa_; }
  void set_isa_hint(Isa isa) { isa_ = isa; }

  // Handler signature; public for the dispatch table.
  using Handler = bool (TextKvmParser::*)(std::string_view body, KvmEvent* out);
  bool Exit(std::string_view body, KvmEvent* out);
  bool Entry(std::string_view body, KvmEvent* out);
  bool Msr(std::string_view body, KvmEvent* out);
  bool Pio(std::string_view body, KvmEvent* out);
  bool Mmio(std::string_view body, KvmEvent* out);
  bool Cr(std::string_view body, KvmEvent* out);
  bool Hypercall(std::string_view body, KvmEvent* out);
  bool UserspaceExit(std::string_view body, KvmEvent* out);
  bool PageFault(std::string_view body, KvmEvent* out);
  bool EmulateInsn(std::string_view body, KvmEvent* out);
  bool FastMmio(std::string_view body, KvmEvent* out);
  bool Cpuid(std::string_view body, KvmEvent* out);
  bool KindOnly(std::string_view body, KvmEvent* out);
  // arm64 (arch/arm64/kvm/trace_arm.h, trace_handle_exit.h TP_printk).
  bool Arm64Exit(std::string_view body, KvmEvent* out);
  bool SysAccess(std::string_view body, KvmEvent* out);
  bool HandleSysReg(std::string_view body, KvmEvent* out);
  bool HvcArm64(std::string_view body, KvmEvent* out);
  bool WfxArm64(std::string_view body, KvmEvent* out);
  bool GuestFault(std::string_view body, KvmEvent* out);
  bool ArmIrqLine(std::string_view body, KvmEvent* out);

 private:
  // An exit reason's spelling to its ISA (IsaFromReasonName) and its code per ISA
  // (ExitReasonFromName), remembered: both scan the reason tables without case, and a text repeats a
  // few dozen spellings millions of times (that scan was a third of the text reader's time).
  struct ReasonMemo {
    Isa guessed = Isa::kUnknown;
    std::optional<uint32_t> code[4];  // by Isa
    uint8_t looked_up = 0;            // bit per Isa
  };
  struct NameHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  ReasonMemo& MemoFor(std::string_view reason);
  std::optional<uint32_t> ReasonCode(ReasonMemo& memo, Isa isa, std::string_view reason);

  Diagnostics* diagnostics_;
  Isa isa_ = Isa::kUnknown;
  std::unordered_map<std::string, ReasonMemo, NameHash, std::equal_to<>> reasons_;
  ReasonMemo scratch_;  // for spellings past kMaxReasonMemos (a damaged text's), not remembered
};

// Event kind for a tracepoint name ("kvm_exit" → kExit); kOther when not modeled.
EventKind EventKindFromName(std::string_view name);

}  // namespace exitscope
