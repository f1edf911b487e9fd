#include "decode/text_kvm_parser.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <string>

#include "decode/arm64_exit_codes.h"
#include "decode/exit_reason_codes.h"
#include "decode/exit_reasons.h"

namespace exitscope {

namespace {

// Whitespace tokens of a body, trailing commas dropped ("vcpu 0, rip 0x1000").
class Tokens {
 public:
  explicit Tokens(std::string_view s) : s_(s) {}
  bool Next(std::string_view* tok) {
    while (pos_ < s_.size() && s_[pos_] == ' ') ++pos_;
    if (pos_ >= s_.size()) return false;
    size_t e = s_.find(' ', pos_);
    if (e == std::string_view::npos) e = s_.size();
    *tok = s_.substr(pos_, e - pos_);
    pos_ = e;
    if (!tok->empty() && tok->back() == ',') tok->remove_suffix(1);
    return true;
  }

 private:
  std::string_view s_;
  size_t pos_ = 0;
};

template <typename T>
bool Hex(std::string_view s, T* out) {
  if (s.starts_with("0x") || s.starts_with("0X")) s.remove_prefix(2);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 16);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}
template <typename T>
bool Dec(std::string_view s, T* out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out, 10);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// arch/x86/include/uapi/asm/vmx.h: VMX_EXIT_REASONS_FAILED_VMENTRY, VMX_EXIT_REASONS_SGX_ENCLAVE_MODE.
constexpr uint32_t kVmxExitReasonSgxEnclaveMode = 0x08000000u;

// A kvm_exit token between the reason and the rip: VMX flag words printed after the basic reason
// (__print_flags in arch/x86/kvm/trace.h), the names of VMX_EXIT_REASON_FLAGS, then any other flag
// bits as one hex word ("0x8000000"); or the full value of a reason libtraceevent's table lacks.
inline void AfterReason(std::string_view tok, std::string_view reason, uint32_t* flags,
                        std::optional<uint32_t>* plugin_unknown) {
  uint32_t word = 0;
  if (tok == "FAILED_VMENTRY")
    *flags |= kVmxFailedVmentry;
  else if (tok == "SGX_ENCLAVE_MODE")
    *flags |= kVmxExitReasonSgxEnclaveMode;
  else if (tok.starts_with("0x") && Hex(tok, &word))
    *flags |= word & ~kVmxBasicReasonMask;
  // libtraceevent's kvm plugin prints a reason its table lacks (any flagged VMX reason) as
  // "reason UNKNOWN (<full exit_reason in decimal>)" (plugin_kvm.c print_exit_reason).
  else if (reason == "UNKNOWN" && tok.size() > 2 && tok.front() == '(' && tok.back() == ')' &&
           Dec(tok.substr(1, tok.size() - 2), &word)) {
    *plugin_unknown = word;
  }
}

// The ISA of a reason printed only as its full value: a VMX one when the basic reason is known and
// the trace's other lines are not SVM's (SVM codes carry no flag bits; unknown ones stay unknown).
Isa PluginUnknownIsa(uint32_t full, Isa trace_isa) {
  if (trace_isa == Isa::kUnknown && (full & ~kVmxBasicReasonMask) &&
      ExitReasonName(Isa::kVmx, full & kVmxBasicReasonMask).find("UNKNOWN") == std::string::npos) {
    return Isa::kVmx;
  }
  return trace_isa;
}

}  // namespace

EventKind EventKindFromName(std::string_view name) {
  for (int k = 1; k < static_cast<int>(EventKind::kCount); ++k) {
    if (EventKindName(static_cast<EventKind>(k)) == name) return static_cast<EventKind>(k);
  }
  return EventKind::kOther;
}

bool TextKvmParser::Parse(std::string_view event, std::string_view body, KvmEvent* out) {
  struct Entry {
    EventKind kind;
    Handler handler;
  };
  static constexpr Entry kHandlers[] = {
      {EventKind::kExit, &TextKvmParser::Exit},
      {EventKind::kEntry, &TextKvmParser::Entry},
      {EventKind::kMsr, &TextKvmParser::Msr},
      {EventKind::kPio, &TextKvmParser::Pio},
      {EventKind::kMmio, &TextKvmParser::Mmio},
      {EventKind::kCr, &TextKvmParser::Cr},
      {EventKind::kHypercall, &TextKvmParser::Hypercall},
      {EventKind::kUserspaceExit, &TextKvmParser::UserspaceExit},
      {EventKind::kPageFault, &TextKvmParser::PageFault},
      {EventKind::kEmulateInsn, &TextKvmParser::EmulateInsn},
      {EventKind::kFastMmio, &TextKvmParser::FastMmio},
      {EventKind::kCpuid, &TextKvmParser::Cpuid},
      {EventKind::kSysReg, &TextKvmParser::SysAccess},
      {EventKind::kHandleSysReg, &TextKvmParser::HandleSysReg},
      {EventKind::kHvcArm64, &TextKvmParser::HvcArm64},
      {EventKind::kWfx, &TextKvmParser::WfxArm64},
      {EventKind::kGuestFault, &TextKvmParser::GuestFault},
      {EventKind::kTimerIrq, &TextKvmParser::ArmIrqLine},
      {EventKind::kVgicIrq, &TextKvmParser::ArmIrqLine},
  };
  EventKind kind = EventKindFromName(event);
  out->kind = kind;
  for (const auto& h : kHandlers) {
    if (h.kind == kind) return (this->*h.handler)(body, out);
  }
  return KindOnly(body, out);
}

bool TextKvmParser::KindOnly(std::string_view, KvmEvent*) { return true; }

// Spellings remembered at most: a damaged text's reason names, each different, do not grow memory.
constexpr size_t kMaxReasonMemos = 4096;

TextKvmParser::ReasonMemo& TextKvmParser::MemoFor(std::string_view reason) {
  if (auto it = reasons_.find(reason); it != reasons_.end()) return it->second;
  ReasonMemo memo;
  memo.guessed = IsaFromReasonName(reason);
  if (reasons_.size() >= kMaxReasonMemos) {
    scratch_ = memo;
    return scratch_;
  }
  return reasons_.emplace(std::string(reason), memo).first->second;
}

std::optional<uint32_t> TextKvmParser::ReasonCode(ReasonMemo& memo, Isa isa, std::string_view reason) {
  const auto i = static_cast<size_t>(isa);
  if (!(memo.looked_up & (1u << i))) {
    memo.code[i] = ExitReasonFromName(isa, reason);
    memo.looked_up |= static_cast<uint8_t>(1u << i);
  }
  return memo.code[i];
}

// New (kernel ≥ 5.x): "vcpu 0 reason npf rip 0x1000 info1 0x… info2 0x… intr_info 0x… error_code 0x…
//                      [requests 0x…]"
// Old kernel / libtraceevent plugin: "reason EXIT_NPF rip 0x1000 info 100000014 1000" (hex, no 0x),
// the plugin optionally adding "func+0xoff" after the rip.
bool TextKvmParser::Exit(std::string_view body, KvmEvent* out) {
  if (body.find(" HSR_EC: ") != std::string_view::npos) return Arm64Exit(body, out);
  Tokens t(body);
  std::string_view tok, reason;
  bool have_rip = false;
  uint32_t flags = 0;
  std::optional<uint32_t> plugin_unknown;
  while (t.Next(&tok)) {
    std::string_view v;
    if (tok == "vcpu") {
      if (!t.Next(&v) || !Dec(v, &out->vcpu_id)) return false;
    } else if (tok == "reason") {
      if (!t.Next(&reason)) return false;
    } else if (tok == "rip") {
      if (!t.Next(&v) || !Hex(v, &out->rip)) return false;
      have_rip = true;
    } else if (tok == "info1") {
      if (!t.Next(&v) || !Hex(v, &out->info1)) return false;
    } else if (tok == "info2") {
      if (!t.Next(&v) || !Hex(v, &out->info2)) return false;
    } else if (tok == "info") {
      std::string_view v2;
      if (!t.Next(&v) || !t.Next(&v2) || !Hex(v, &out->info1) || !Hex(v2, &out->info2)) return false;
    } else if (tok == "intr_info") {
      if (!t.Next(&v) || !Hex(v, &out->intr_info)) return false;
    } else if (tok == "error_code") {
      if (!t.Next(&v) || !Hex(v, &out->error_code)) return false;
    } else if (!reason.empty() && !have_rip) {
      AfterReason(tok, reason, &flags, &plugin_unknown);
    }
  }
  if (reason.empty() || !have_rip) return false;
  if (plugin_unknown) {  // only the full value is printed
    out->reason = *plugin_unknown;
    out->isa = PluginUnknownIsa(*plugin_unknown, isa_);
    return true;
  }
  ReasonMemo& memo = MemoFor(reason);
  Isa isa = memo.guessed;
  if (isa == Isa::kArm64) isa = Isa::kUnknown;  // an x86 line: arm64's kvm_exit reads as Arm64Exit
  if (isa != Isa::kUnknown) {
    if (isa_ != Isa::kUnknown && isa != isa_) {
      diagnostics_->Bump(DiagId::kTextMixedIsa);
    }
    isa_ = isa;
  }
  out->isa = isa != Isa::kUnknown ? isa : isa_;
  if (auto code = ReasonCode(memo, out->isa, reason)) {
    out->reason = *code;
  } else if (Hex(reason, &out->reason)) {
    // __print_symbolic prints an unknown value as hex ("0x402").
  } else {
    diagnostics_->Bump(DiagId::kTextUnknownExitReason);
    return false;
  }
  if (out->isa != Isa::kSvm) out->reason |= flags;  // SVM codes are printed whole, never with flags
  return true;
}

// "<ret>: HSR_EC: 0x0018 (SYS64), PC: 0x0000000000010840": ret by name (IRQ, SERROR, TRAP, HYP_GONE)
// or in hex where the kernel's table lacks it; the class in hex (its name is the kernel's).
bool TextKvmParser::Arm64Exit(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view type, hsr, ec, name, pc_key, pc;
  if (!t.Next(&type) || !t.Next(&hsr) || !t.Next(&ec) || !t.Next(&name) || !t.Next(&pc_key) || !t.Next(&pc) ||
      hsr != "HSR_EC:" || pc_key != "PC:" || !type.ends_with(':')) {
    return false;
  }
  type.remove_suffix(1);
  uint32_t ret = 0, esr_ec = 0;
  bool named = false;
  for (const auto& n : kArm64ExitTypes) {
    if (n.name == type) ret = n.code, named = true;
  }
  if (!named && !Hex(type, &ret)) return false;
  if (!Hex(ec, &esr_ec) || !Hex(pc, &out->rip)) return false;
  out->reason = Arm64ExitKey(ret, esr_ec);
  out->info1 = esr_ec;
  out->info2 = ret;
  if (isa_ != Isa::kUnknown && isa_ != Isa::kArm64) diagnostics_->Bump(DiagId::kTextMixedIsa);
  isa_ = Isa::kArm64;
  out->isa = Isa::kArm64;
  return true;
}

// "PC: 10840 SYS_ACTLR_EL1 (3,0,1,0,1) write" (the name may be "UNKN").
bool TextKvmParser::SysAccess(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view pc_key, pc, name, tuple, dir;
  if (!t.Next(&pc_key) || !t.Next(&pc) || !t.Next(&name) || !t.Next(&tuple) || !t.Next(&dir) || pc_key != "PC:" ||
      tuple.size() < 11 || tuple.front() != '(' || tuple.back() != ')') {
    return false;
  }
  uint32_t f[5];
  std::string_view rest = tuple.substr(1, tuple.size() - 2);
  for (int i = 0; i < 5; ++i) {
    size_t comma = i < 4 ? rest.find(',') : rest.size();
    if (comma == std::string_view::npos || !Dec(rest.substr(0, comma), &f[i])) return false;
    rest.remove_prefix(std::min(rest.size(), comma + 1));
  }
  if (dir != "read" && dir != "write") return false;
  out->write = dir == "write";
  out->info1 = SysRegEncoding(f[0], f[1], f[2], f[3], f[4]);
  return Hex(pc, &out->rip);
}

// "HSR 0x6230006f".
bool TextKvmParser::HandleSysReg(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view key, hsr;
  if (!t.Next(&key) || !t.Next(&hsr) || key != "HSR" || !Hex(hsr, &out->info2)) return false;
  out->info1 = SysRegFromEsr(out->info2);
  out->write = !SysRegEsrIsRead(out->info2);
  return true;
}

// "HVC at 0x0000000000010830 (r0: 0x0000000084000000, imm: 0x0)".
bool TextKvmParser::HvcArm64(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view hvc, at, pc, r0_key, r0, imm_key, imm;
  if (!t.Next(&hvc) || !t.Next(&at) || !t.Next(&pc) || !t.Next(&r0_key) || !t.Next(&r0) || !t.Next(&imm_key) ||
      !t.Next(&imm) || hvc != "HVC" || r0_key != "(r0:" || imm_key != "imm:" || !imm.ends_with(')')) {
    return false;
  }
  imm.remove_suffix(1);
  return Hex(pc, &out->rip) && Hex(r0, &out->info1) && Hex(imm, &out->info2);
}

// "guest executed wfi at: 0x0000000000010878" (wfe for WFE).
bool TextKvmParser::WfxArm64(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view guest, executed, insn, at, pc;
  if (!t.Next(&guest) || !t.Next(&executed) || !t.Next(&insn) || !t.Next(&at) || !t.Next(&pc) ||
      (insn != "wfi" && insn != "wfe")) {
    return false;
  }
  out->aux = insn == "wfe";
  return Hex(pc, &out->rip);
}

// "ipa 0x10000000, hsr 0x93d68046, hxfar 0x10000000, pc 0x00000000010858".
bool TextKvmParser::GuestFault(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view k1, ipa, k2, hsr, k3, hxfar, k4, pc;
  if (!t.Next(&k1) || !t.Next(&ipa) || !t.Next(&k2) || !t.Next(&hsr) || !t.Next(&k3) || !t.Next(&hxfar) ||
      !t.Next(&k4) || !t.Next(&pc) || k1 != "ipa" || k2 != "hsr" || k4 != "pc") {
    return false;
  }
  if (!Hex(ipa, &out->info1) || !Hex(hsr, &out->info2) || !Hex(pc, &out->rip)) return false;
  out->aux = static_cast<uint32_t>(FaultAccessFromEsr(out->info2));
  return true;
}

// kvm_timer_update_irq "VCPU: 0, IRQ 27, level 0"; vgic_update_irq_pending "…, level: 1".
bool TextKvmParser::ArmIrqLine(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view k1, vcpu, k2, irq, k3, level;
  if (!t.Next(&k1) || !t.Next(&vcpu) || !t.Next(&k2) || !t.Next(&irq) || !t.Next(&k3) || !t.Next(&level) ||
      k1 != "VCPU:" || k2 != "IRQ" || (k3 != "level" && k3 != "level:")) {
    return false;
  }
  return Dec(vcpu, &out->vcpu_id) && Dec(irq, &out->info1) && Dec(level, &out->aux);
}

// "vcpu 0, rip 0x1000" (kernel), "vcpu 0 rip 0x1000" (plugin), "vcpu 0" (old kernels); arm64
// "PC: 0x0000000000010800" (the vCPU is the thread).
bool TextKvmParser::Entry(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view tok, v;
  bool have_vcpu = false;
  while (t.Next(&tok)) {
    if (tok == "PC:") {
      if (!t.Next(&v) || !Hex(v, &out->rip)) return false;
      out->isa = Isa::kArm64;
      return true;
    }
    if (tok == "vcpu") {
      if (!t.Next(&v) || !Dec(v, &out->vcpu_id)) return false;
      have_vcpu = true;
    } else if (tok == "rip") {
      if (!t.Next(&v)) return false;
      if (v.ends_with("[immediate")) v.remove_suffix(10);
      if (!Hex(v, &out->rip)) return false;
    }
  }
  return have_vcpu;
}

// "msr_read 1b = 0xfee00900" / "msr_write 1b = 0x… (#GP)".
bool TextKvmParser::Msr(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view rw, idx, eq, val;
  if (!t.Next(&rw) || !t.Next(&idx) || !t.Next(&eq) || !t.Next(&val) || eq != "=") return false;
  if (rw != "msr_read" && rw != "msr_write") return false;
  out->write = rw == "msr_write";
  out->error_code = body.ends_with("(#GP)") ? 1 : 0;
  return Hex(idx, &out->info1) && Hex(val, &out->info2);
}

// "pio_write at 0x10 size 1 count 1 val 0x41 [(...)]".
bool TextKvmParser::Pio(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view rw, at, port, k1, size, k2, count, k3, val;
  if (!t.Next(&rw) || !t.Next(&at) || !t.Next(&port) || !t.Next(&k1) || !t.Next(&size) || !t.Next(&k2) ||
      !t.Next(&count) || !t.Next(&k3) || !t.Next(&val)) {
    return false;
  }
  if ((rw != "pio_read" && rw != "pio_write") || at != "at" || k1 != "size" || k2 != "count" || k3 != "val") {
    return false;
  }
  out->write = rw == "pio_write";
  return Hex(port, &out->info1) && Dec(size, &out->size) && Dec(count, &out->count) && Hex(val, &out->info2);
}

// "mmio write len 1 gpa 0x20000 val 0x5a" (type: unsatisfied-read / read / write).
bool TextKvmParser::Mmio(std::string_view body, KvmEvent* out) {
  // KVM_TRACE_MMIO_* (include/trace/events/kvm.h): 0 unsatisfied read, 1 read, 2 write.
  static constexpr uint32_t kMmioUnsatisfiedRead = 0, kMmioRead = 1, kMmioWrite = 2;
  Tokens t(body);
  std::string_view m, type, k1, len, k2, gpa, k3, val;
  if (!t.Next(&m) || !t.Next(&type) || !t.Next(&k1) || !t.Next(&len) || !t.Next(&k2) || !t.Next(&gpa) || m != "mmio" ||
      k1 != "len" || k2 != "gpa") {
    return false;
  }
  if (type == "write")
    out->aux = kMmioWrite;
  else if (type == "read")
    out->aux = kMmioRead;
  else if (type == "unsatisfied-read")
    out->aux = kMmioUnsatisfiedRead;
  else
    return false;
  out->write = out->aux == kMmioWrite;
  if (t.Next(&k3) && k3 == "val" && t.Next(&val) && !Hex(val, &out->info2)) return false;
  return Dec(len, &out->size) && Hex(gpa, &out->info1);
}

// "cr_write 4 = 0x…".
bool TextKvmParser::Cr(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view rw, cr, eq, val;
  if (!t.Next(&rw) || !t.Next(&cr) || !t.Next(&eq) || !t.Next(&val) || eq != "=") return false;
  if (rw != "cr_read" && rw != "cr_write") return false;
  out->write = rw == "cr_write";
  return Hex(cr, &out->size) && Hex(val, &out->info2);
}

// "nr 0x1 a0 0x0 a1 0x0 a2 0x0 a3 0x0".
bool TextKvmParser::Hypercall(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view k, nr;
  if (!t.Next(&k) || k != "nr" || !t.Next(&nr) || !Hex(nr, &out->info1)) return false;
  out->reason = static_cast<uint32_t>(out->info1);
  return true;
}

// "reason KVM_EXIT_IO (2)"; "reason restart (-4)" / "reason error (-14)" carry an errno.
bool TextKvmParser::UserspaceExit(std::string_view body, KvmEvent* out) {
  size_t open = body.rfind('('), close = body.rfind(')');
  if (!body.starts_with("reason ") || open == std::string_view::npos || close < open) return false;
  int64_t n = 0;
  if (!Dec(body.substr(open + 1, close - open - 1), &n)) return false;
  std::string_view name = body.substr(7, open - 7);
  if (name.starts_with("restart") || name.starts_with("error") || n < 0) {
    out->error_code = static_cast<uint32_t>(n < 0 ? -n : n);
  } else {
    out->reason = static_cast<uint32_t>(n);
  }
  return true;
}

// "vcpu 0 rip 0x1000 address 0x… error_code 0x…" (6.1); "address 1000 error_code 4" (older).
bool TextKvmParser::PageFault(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view tok, v;
  bool have_addr = false;
  while (t.Next(&tok)) {
    if (tok == "vcpu") {
      if (!t.Next(&v) || !Dec(v, &out->vcpu_id)) return false;
    } else if (tok == "rip") {
      if (!t.Next(&v) || !Hex(v, &out->rip)) return false;
    } else if (tok == "address") {
      if (!t.Next(&v) || !Hex(v, &out->info1)) return false;
      have_addr = true;
    } else if (tok == "error_code") {
      if (!t.Next(&v) || !Hex(v, &out->info2)) return false;
    }
  }
  return have_addr;
}

// "0:1012:0f a2 (real)" (kernel) / "0:1012: 0f a2" (plugin): csbase:rip:bytes.
bool TextKvmParser::EmulateInsn(std::string_view body, KvmEvent* out) {
  size_t c1 = body.find(':');
  size_t c2 = c1 == std::string_view::npos ? c1 : body.find(':', c1 + 1);
  if (c2 == std::string_view::npos) return false;
  return Hex(body.substr(c1 + 1, c2 - c1 - 1), &out->rip);
}

// "fast mmio at gpa 0x…".
bool TextKvmParser::FastMmio(std::string_view body, KvmEvent* out) {
  size_t g = body.find("gpa ");
  return g != std::string_view::npos && Hex(body.substr(g + 4), &out->info1);
}

// "func 0 idx 0 rax d rbx … , cpuid entry found": function and index (hex) into info1/info2.
bool TextKvmParser::Cpuid(std::string_view body, KvmEvent* out) {
  Tokens t(body);
  std::string_view k1, f, k2, i;
  if (!t.Next(&k1) || !t.Next(&f) || k1 != "func" || !Hex(f, &out->info1)) return false;
  if (t.Next(&k2) && k2 == "idx" && t.Next(&i)) Hex(i, &out->info2);
  return true;
}

}  // namespace exitscope
