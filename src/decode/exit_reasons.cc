#include "decode/exit_reasons.h"

#include <cctype>
#include <cstdio>
#include <span>

#include "decode/arm64_exit_codes.h"
#include "decode/exit_reason_codes.h"

namespace exitscope {
namespace {

struct ReasonName {
  uint32_t code;
  std::string_view name;    // as the kernel prints it (VMX_EXIT_REASONS / SVM_EXIT_REASONS)
  std::string_view plugin;  // libtraceevent kvm plugin spelling when it is not "EXIT_" + upper(name)
};

// arch/x86/include/uapi/asm/vmx.h (mainline as of Linux 6.18: EXIT_REASON_* 0..85, plus SEAMCALL 76
// which the kernel defines but does not name in VMX_EXIT_REASONS). Basic reason = low 16 bits.
constexpr ReasonName kVmxReasons[] = {
    {0, "EXCEPTION_NMI", {}},
    {1, "EXTERNAL_INTERRUPT", {}},
    {2, "TRIPLE_FAULT", {}},
    {3, "INIT_SIGNAL", {}},
    {4, "SIPI_SIGNAL", {}},
    {7, "INTERRUPT_WINDOW", {}},
    {8, "NMI_WINDOW", {}},
    {9, "TASK_SWITCH", {}},
    {10, "CPUID", {}},
    {12, "HLT", {}},
    {13, "INVD", {}},
    {14, "INVLPG", {}},
    {15, "RDPMC", {}},
    {16, "RDTSC", {}},
    {18, "VMCALL", {}},
    {19, "VMCLEAR", {}},
    {20, "VMLAUNCH", {}},
    {21, "VMPTRLD", {}},
    {22, "VMPTRST", {}},
    {23, "VMREAD", {}},
    {24, "VMRESUME", {}},
    {25, "VMWRITE", {}},
    {26, "VMOFF", {}},
    {27, "VMON", {}},
    {28, "CR_ACCESS", {}},
    {29, "DR_ACCESS", {}},
    {30, "IO_INSTRUCTION", {}},
    {31, "MSR_READ", {}},
    {32, "MSR_WRITE", {}},
    {33, "INVALID_STATE", {}},
    {34, "MSR_LOAD_FAIL", {}},
    {36, "MWAIT_INSTRUCTION", {}},
    {37, "MONITOR_TRAP_FLAG", {}},
    {39, "MONITOR_INSTRUCTION", {}},
    {40, "PAUSE_INSTRUCTION", {}},
    {41, "MCE_DURING_VMENTRY", {}},
    {43, "TPR_BELOW_THRESHOLD", {}},
    {44, "APIC_ACCESS", {}},
    {45, "EOI_INDUCED", {}},
    {46, "GDTR_IDTR", {}},
    {47, "LDTR_TR", {}},
    {48, "EPT_VIOLATION", {}},
    {49, "EPT_MISCONFIG", {}},
    {50, "INVEPT", {}},
    {51, "RDTSCP", {}},
    {52, "PREEMPTION_TIMER", {}},
    {53, "INVVPID", {}},
    {54, "WBINVD", {}},
    {55, "XSETBV", {}},
    {56, "APIC_WRITE", {}},
    {57, "RDRAND", {}},
    {58, "INVPCID", {}},
    {59, "VMFUNC", {}},
    {60, "ENCLS", {}},
    {61, "RDSEED", {}},
    {62, "PML_FULL", {}},
    {63, "XSAVES", {}},
    {64, "XRSTORS", {}},
    {67, "UMWAIT", {}},
    {68, "TPAUSE", {}},
    {74, "BUS_LOCK", {}},
    {75, "NOTIFY", {}},
    {76, "SEAMCALL", {}},
    {77, "TDCALL", {}},
    {84, "MSR_READ_IMM", {}},
    {85, "MSR_WRITE_IMM", {}},
};

// VMX_EXIT_REASON_FLAGS (vmx.h): only FAILED_VMENTRY (kVmxFailedVmentry, exit_reason_codes.h) is
// named; other high bits print as hex.

// arch/x86/include/uapi/asm/svm.h SVM_EXIT_REASONS (6.1 print fmt of kvm_exit, plus buslock 0x0a5 and
// idle-halt 0x0a6 from 6.14+). Plugin names from libtraceevent plugins/plugin_kvm.c.
constexpr ReasonName kSvmReasons[] = {
    {0x000, "read_cr0", {}},
    {0x002, "read_cr2", {}},
    {0x003, "read_cr3", {}},
    {0x004, "read_cr4", {}},
    {0x008, "read_cr8", {}},
    {0x010, "write_cr0", {}},
    {0x012, "write_cr2", {}},
    {0x013, "write_cr3", {}},
    {0x014, "write_cr4", {}},
    {0x018, "write_cr8", {}},
    {0x020, "read_dr0", {}},
    {0x021, "read_dr1", {}},
    {0x022, "read_dr2", {}},
    {0x023, "read_dr3", {}},
    {0x024, "read_dr4", {}},
    {0x025, "read_dr5", {}},
    {0x026, "read_dr6", {}},
    {0x027, "read_dr7", {}},
    {0x030, "write_dr0", {}},
    {0x031, "write_dr1", {}},
    {0x032, "write_dr2", {}},
    {0x033, "write_dr3", {}},
    {0x034, "write_dr4", {}},
    {0x035, "write_dr5", {}},
    {0x036, "write_dr6", {}},
    {0x037, "write_dr7", {}},
    // SVM_EXIT_EXCP_BASE (0x040) + vector.
    {0x040, "DE excp", "EXIT_EXCP_DE"},
    {0x041, "DB excp", "EXIT_EXCP_DB"},
    {0x043, "BP excp", "EXIT_EXCP_BP"},
    {0x044, "OF excp", "EXIT_EXCP_OF"},
    {0x045, "BR excp", "EXIT_EXCP_BR"},
    {0x046, "UD excp", "EXIT_EXCP_UD"},
    {0x047, "NM excp", "EXIT_EXCP_NM"},
    {0x048, "DF excp", "EXIT_EXCP_DF"},
    {0x04a, "TS excp", "EXIT_EXCP_TS"},
    {0x04b, "NP excp", "EXIT_EXCP_NP"},
    {0x04c, "SS excp", "EXIT_EXCP_SS"},
    {0x04d, "GP excp", "EXIT_EXCP_GP"},
    {0x04e, "PF excp", "EXIT_EXCP_PF"},
    {0x050, "MF excp", "EXIT_EXCP_MF"},
    {0x051, "AC excp", "EXIT_EXCP_AC"},
    {0x052, "MC excp", "EXIT_EXCP_MC"},
    {0x053, "XF excp", "EXIT_EXCP_XF"},
    {0x060, "interrupt", "EXIT_INTR"},
    {0x061, "nmi", {}},
    {0x062, "smi", {}},
    {0x063, "init", {}},
    {0x064, "vintr", {}},
    {0x065, "cr0_sel_write", {}},
    {0x066, "read_idtr", "EXIT_IDTR_READ"},
    {0x067, "read_gdtr", "EXIT_GDTR_READ"},
    {0x068, "read_ldtr", "EXIT_LDTR_READ"},
    {0x069, "read_rt", "EXIT_TR_READ"},
    {0x06a, "write_idtr", "EXIT_IDTR_WRITE"},
    {0x06b, "write_gdtr", "EXIT_GDTR_WRITE"},
    {0x06c, "write_ldtr", "EXIT_LDTR_WRITE"},
    {0x06d, "write_rt", "EXIT_TR_WRITE"},
    {0x06e, "rdtsc", {}},
    {0x06f, "rdpmc", {}},
    {0x070, "pushf", {}},
    {0x071, "popf", {}},
    {0x072, "cpuid", {}},
    {0x073, "rsm", {}},
    {0x074, "iret", {}},
    {0x075, "swint", {}},
    {0x076, "invd", {}},
    {0x077, "pause", {}},
    {0x078, "hlt", {}},
    {0x079, "invlpg", {}},
    {0x07a, "invlpga", {}},
    {0x07b, "io", "EXIT_IOIO"},
    {0x07c, "msr", {}},
    {0x07d, "task_switch", {}},
    {0x07e, "ferr_freeze", {}},
    {0x07f, "shutdown", {}},
    {0x080, "vmrun", {}},
    {0x081, "hypercall", "EXIT_VMMCALL"},
    {0x082, "vmload", {}},
    {0x083, "vmsave", {}},
    {0x084, "stgi", {}},
    {0x085, "clgi", {}},
    {0x086, "skinit", {}},
    {0x087, "rdtscp", {}},
    {0x088, "icebp", {}},
    {0x089, "wbinvd", {}},
    {0x08a, "monitor", {}},
    {0x08b, "mwait", {}},
    // 0x08c (SVM_EXIT_MWAIT_COND) and 0x08e (RDPRU): the kernel names neither; the plugin does.
    {0x08c, "UNKNOWN(0x8c)", "EXIT_MWAIT_COND"},
    {0x08d, "xsetbv", {}},
    {0x08e, "UNKNOWN(0x8e)", "EXIT_RDPRU"},
    {0x08f, "write_efer_trap", "EXIT_EFER_WRITE_TRAP"},
    {0x090, "write_cr0_trap", "EXIT_CR0_WRITE_TRAP"},
    {0x094, "write_cr4_trap", "EXIT_CR4_WRITE_TRAP"},
    {0x098, "write_cr8_trap", "EXIT_CR8_WRITE_TRAP"},
    {0x0a2, "invpcid", {}},
    {0x0a5, "buslock", "EXIT_BUS_LOCK"},
    {0x0a6, "idle-halt", "EXIT_IDLE_HLT"},
    {0x400, "npf", {}},
    {0x401, "avic_incomplete_ipi", {}},
    {0x402, "avic_unaccelerated_access", {}},
    {0x403, "vmgexit", {}},
    // SEV-ES/SNP software exit codes (SVM_VMGEXIT_*).
    {0x80000001, "vmgexit_mmio_read", {}},
    {0x80000002, "vmgexit_mmio_write", {}},
    {0x80000003, "vmgexit_nmi_complete", {}},
    {0x80000004, "vmgexit_ap_hlt_loop", {}},
    {0x80000005, "vmgexit_ap_jump_table", {}},
    {0x80000010, "vmgexit_page_state_change", {}},
    {0x80000011, "vmgexit_guest_request", {}},
    {0x80000012, "vmgexit_ext_guest_request", {}},
    {0x80000013, "vmgexit_ap_creation", {}},
    {0x8000fffd, "vmgexit_hypervisor_feature", {}},
    {0xffffffff, "invalid_guest_state", "EXIT_ERR"},  // SVM_EXIT_ERR = -1
};

std::span<const ReasonName> Table(Isa isa) {
  if (isa == Isa::kVmx) return kVmxReasons;
  if (isa == Isa::kSvm) return kSvmReasons;
  return {};
}

const ReasonName* Find(std::span<const ReasonName> table, uint32_t code) {
  for (const auto& r : table) {
    if (r.code == code) return &r;
  }
  return nullptr;
}

bool EqualsNoCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

bool StartsWithNoCase(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && EqualsNoCase(s.substr(0, prefix.size()), prefix);
}

std::string Unknown(uint32_t code) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "UNKNOWN(0x%x)", code);
  return buf;
}

std::optional<uint32_t> ParseUnknown(std::string_view name) {
  if (!StartsWithNoCase(name, "UNKNOWN(0x") || name.back() != ')') return std::nullopt;
  uint64_t v = 0;
  std::string_view hex = name.substr(10, name.size() - 11);
  if (hex.empty() || hex.size() > 8) return std::nullopt;
  for (char c : hex) {
    int d = std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
            : (std::tolower(static_cast<unsigned char>(c)) >= 'a' && std::tolower(static_cast<unsigned char>(c)) <= 'f')
                ? std::tolower(static_cast<unsigned char>(c)) - 'a' + 10
                : -1;
    if (d < 0) return std::nullopt;
    v = v * 16 + static_cast<uint64_t>(d);
  }
  return static_cast<uint32_t>(v);
}

// Matches one spelling of a single (flag-free) reason in `isa`'s table.
std::optional<uint32_t> MatchOne(Isa isa, std::string_view name) {
  if (auto u = ParseUnknown(name)) return u;
  auto table = Table(isa);
  for (const auto& r : table) {
    if (EqualsNoCase(r.name, name)) return r.code;
  }
  // libtraceevent spellings: explicit, or "EXIT_" + kernel name; VMX also as "EXIT_REASON_" + name.
  for (const auto& r : table) {
    if (!r.plugin.empty() && EqualsNoCase(r.plugin, name)) return r.code;
  }
  for (std::string_view prefix : {std::string_view("EXIT_REASON_"), std::string_view("EXIT_")}) {
    if (!StartsWithNoCase(name, prefix)) continue;
    std::string_view rest = name.substr(prefix.size());
    for (const auto& r : table) {
      if (EqualsNoCase(r.name, rest)) return r.code;
    }
  }
  return std::nullopt;
}

// Reasons that mean the same event on both ISAs, by their kernel names (VMX_EXIT_REASONS /
// SVM_EXIT_REASONS). SVM has one msr exit for RDMSR and WRMSR (exit_info1 0/1), hence two rows.
constexpr std::pair<std::string_view, std::string_view> kEquivalent[] = {
    {"EXTERNAL_INTERRUPT", "interrupt"},
    {"INTERRUPT_WINDOW", "vintr"},
    {"TASK_SWITCH", "task_switch"},
    {"CPUID", "cpuid"},
    {"HLT", "hlt"},
    {"INVD", "invd"},
    {"INVLPG", "invlpg"},
    {"RDPMC", "rdpmc"},
    {"RDTSC", "rdtsc"},
    {"VMCALL", "hypercall"},
    {"IO_INSTRUCTION", "io"},
    {"MSR_READ", "msr"},
    {"MSR_WRITE", "msr"},
    {"MWAIT_INSTRUCTION", "mwait"},
    {"MONITOR_INSTRUCTION", "monitor"},
    {"PAUSE_INSTRUCTION", "pause"},
    {"EPT_VIOLATION", "npf"},
    {"RDTSCP", "rdtscp"},
    {"WBINVD", "wbinvd"},
    {"XSETBV", "xsetbv"},
    {"INVPCID", "invpcid"},
    {"TRIPLE_FAULT", "shutdown"},
    {"INIT_SIGNAL", "init"},
    {"BUS_LOCK", "buslock"},
};

// arm64: a TRAP's exception class, or another exit type (decode/arm64_exit_codes.h); "SERROR" is both
// (an SError exit, and the SError exception class) and selects both.
void MatchArm64(std::string_view name, std::vector<uint32_t>* out) {
  if (auto u = ParseUnknown(name)) {
    out->push_back(*u);
    return;
  }
  for (const auto& c : kArm64ExceptionClasses) {
    if (EqualsNoCase(c.name, name)) out->push_back(c.code);
  }
  for (const auto& t : kArm64ExitTypes) {
    if (t.code != kArmExceptionTrap && EqualsNoCase(t.name, name)) out->push_back(kArm64NonTrapBase + t.code);
  }
}

std::string Arm64ReasonName(uint32_t key) {
  if (Arm64IsTrap(key)) {
    for (const auto& c : kArm64ExceptionClasses) {
      if (c.code == key) return std::string(c.name);
    }
    return Unknown(key);
  }
  for (const auto& t : kArm64ExitTypes) {
    if (kArm64NonTrapBase + t.code == key) return std::string(t.name);
  }
  char buf[40];
  std::snprintf(buf, sizeof buf, "UNKNOWN_EXIT(0x%x)", key - kArm64NonTrapBase);
  return buf;
}

void AddOnce(std::vector<uint32_t>* v, uint32_t code) {
  for (uint32_t c : *v) {
    if (c == code) return;
  }
  v->push_back(code);
}

}  // namespace

bool ReasonCodes::Matches(Isa isa, uint32_t exit_reason) const {
  if (isa == Isa::kVmx) exit_reason &= kVmxBasicReasonMask;
  for (uint32_t c : of(isa)) {
    if ((isa == Isa::kVmx ? (c & kVmxBasicReasonMask) : c) == exit_reason) return true;
  }
  return false;
}

ReasonCodes ReasonCodesFromName(std::string_view name) {
  ReasonCodes out;
  const std::optional<uint32_t> vmx_code = ExitReasonFromName(Isa::kVmx, name);
  const std::optional<uint32_t> svm_code = ExitReasonFromName(Isa::kSvm, name);
  bool vmx = vmx_code.has_value(), svm = svm_code.has_value();
  const uint32_t vmx_reason = vmx_code.value_or(0), svm_reason = svm_code.value_or(0);
  // An UNKNOWN(0x…) spelling parses in both tables: keep it for the ISA it was guessed for.
  if (vmx && svm && vmx_reason == svm_reason) {
    Isa guessed = IsaFromReasonName(name);
    if (guessed == Isa::kSvm) vmx = false;
    if (guessed == Isa::kVmx) svm = false;
  }
  if (vmx) AddOnce(&out.vmx, vmx_reason);
  if (svm) AddOnce(&out.svm, svm_reason);
  for (const auto& [v, s] : kEquivalent) {
    if (vmx && !svm && (vmx_reason & kVmxBasicReasonMask) == MatchOne(Isa::kVmx, v)) {
      if (auto c = MatchOne(Isa::kSvm, s)) AddOnce(&out.svm, *c);
    }
    if (svm && !vmx && svm_reason == MatchOne(Isa::kSvm, s)) {
      if (auto c = MatchOne(Isa::kVmx, v)) AddOnce(&out.vmx, *c);
    }
  }
  std::vector<uint32_t> arm64;  // no x86 equivalents: the classes are not x86 exit reasons
  MatchArm64(name, &arm64);
  for (uint32_t c : arm64) AddOnce(&out.arm64, c);
  return out;
}

std::string ExitReasonName(Isa isa, uint32_t exit_reason) {
  if (isa == Isa::kVmx) {
    uint32_t basic = exit_reason & kVmxBasicReasonMask;
    const ReasonName* r = Find(kVmxReasons, basic);
    std::string out = r ? std::string(r->name) : Unknown(basic);
    uint32_t flags = exit_reason & ~kVmxBasicReasonMask;
    if (flags & kVmxFailedVmentry) out += " FAILED_VMENTRY";
    if (uint32_t rest = flags & ~kVmxFailedVmentry) {
      char buf[24];
      std::snprintf(buf, sizeof buf, " 0x%x", rest);
      out += buf;
    }
    return out;
  }
  if (isa == Isa::kSvm) {
    const ReasonName* r = Find(kSvmReasons, exit_reason);
    return r ? std::string(r->name) : Unknown(exit_reason);
  }
  if (isa == Isa::kArm64) return Arm64ReasonName(exit_reason);
  return Unknown(exit_reason);
}

std::optional<uint32_t> ExitReasonFromName(Isa isa, std::string_view name) {
  while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  if (name.empty()) return std::nullopt;
  if (isa == Isa::kUnknown) {
    Isa guess = IsaFromReasonName(name);
    if (guess == Isa::kUnknown) return ParseUnknown(name);
    isa = guess;
  }
  if (isa == Isa::kArm64) {
    std::vector<uint32_t> codes;
    MatchArm64(name, &codes);
    if (codes.empty()) return std::nullopt;
    return codes.front();
  }
  if (isa == Isa::kVmx) {
    constexpr std::string_view kFailed = " FAILED_VMENTRY";
    if (name.size() > kFailed.size() && EqualsNoCase(name.substr(name.size() - kFailed.size()), kFailed)) {
      auto basic = MatchOne(isa, name.substr(0, name.size() - kFailed.size()));
      if (basic) return *basic | kVmxFailedVmentry;
      return std::nullopt;
    }
  }
  return MatchOne(isa, name);
}

Isa IsaFromReasonName(std::string_view name) {
  // Exact case first: VMX names are upper case, SVM's lower case; then the EXIT_* plugin spellings
  // (SVM only: the plugin prints VMX reasons without a prefix).
  for (const auto& r : kVmxReasons) {
    if (r.name == name) return Isa::kVmx;
  }
  for (const auto& r : kSvmReasons) {
    if (r.name == name) return Isa::kSvm;
  }
  if (StartsWithNoCase(name, "EXIT_REASON_")) return Isa::kVmx;
  if (StartsWithNoCase(name, "EXIT_") && MatchOne(Isa::kSvm, name)) return Isa::kSvm;
  if (MatchOne(Isa::kVmx, name)) return Isa::kVmx;
  if (MatchOne(Isa::kSvm, name)) return Isa::kSvm;
  std::vector<uint32_t> arm64;
  MatchArm64(name, &arm64);
  return arm64.empty() ? Isa::kUnknown : Isa::kArm64;
}

}  // namespace exitscope
