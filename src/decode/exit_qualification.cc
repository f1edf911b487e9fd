#include "decode/exit_qualification.h"

#include <fmt/format.h>

#include <span>
#include <string_view>

#include "decode/exit_reason_codes.h"
#include "decode/msr_names.h"

namespace exitscope {
namespace {

// Exit-reason codes (vmx.h EXIT_REASON_*, svm.h SVM_EXIT_*): decode/exit_reason_codes.h.

// arch/x86/include/asm/vmx.h, interruption-information format (intr_info).
constexpr uint32_t kIntrInfoVectorMask = 0xff;    // INTR_INFO_VECTOR_MASK, 7:0
constexpr uint32_t kIntrInfoTypeMask = 0x700;     // INTR_INFO_INTR_TYPE_MASK, 10:8
constexpr uint32_t kIntrInfoValid = 0x80000000u;  // INTR_INFO_VALID_MASK, 31
// asm/vmx.h exit qualification for MOV CR: CONTROL_REG_ACCESS_NUM (the SDM's 3:0, as vmx.c
// handle_cr() reads it), CONTROL_REG_ACCESS_TYPE 5:4, CONTROL_REG_ACCESS_REG 11:8.
constexpr uint64_t kCrNumMask = 0xf;
constexpr int kCrTypeShift = 4;
constexpr int kCrRegShift = 8;
// asm/vmx.h exit qualification for MOV DR: DEBUG_REG_ACCESS_NUM 2:0, DEBUG_REG_ACCESS_TYPE bit 4
// (TYPE_MOV_FROM_DR = 1 << 4).
constexpr uint64_t kDrNumMask = 0x7;
constexpr uint64_t kDrMovFrom = 0x10;
// Exit qualification for I/O instructions (Intel SDM vol. 3 table 28-5; vmx.c handle_io()):
// size - 1 in 2:0, bit 3 in, bit 4 string, bit 5 rep, port in 31:16.
constexpr uint64_t kVmxIoSizeMask = 0x7;
constexpr uint64_t kVmxIoIn = 0x8;
constexpr uint64_t kVmxIoString = 0x10;
constexpr uint64_t kVmxIoRep = 0x20;
constexpr int kIoPortShift = 16;
// asm/vmx.h APIC_ACCESS_OFFSET (11:0) and APIC_ACCESS_TYPE (15:12); vmx.c handle_apic_write() reads
// the register of an APIC_WRITE as exit_qualification & 0xff0.
constexpr uint64_t kApicAccessOffsetMask = 0xfff;
constexpr int kApicAccessTypeShift = 12;
constexpr uint64_t kApicWriteOffsetMask = 0xff0;
// vmx.c handle_apic_eoi_induced(): the EOI'd vector is exit_qualification & 0xff.
constexpr uint64_t kEoiVectorMask = 0xff;
// asm/vmx.h EPT_VIOLATION_ACC_READ/WRITE/INSTR (bits 0-2), EPT_VIOLATION_PROT_* (bits 3-5: the
// EPT entry's R/W/X; none set = the GPA was not mapped).
constexpr uint64_t kEptAccRead = 1u << 0;
constexpr uint64_t kEptAccWrite = 1u << 1;
constexpr uint64_t kEptAccInstr = 1u << 2;
constexpr uint64_t kEptProtMask = 0x38;

// arch/x86/include/asm/svm.h SVM_IOIO_TYPE_MASK (1 = in), SVM_IOIO_STR_MASK, SVM_IOIO_REP_MASK,
// SVM_IOIO_SIZE_MASK (one-hot SZ8/SZ16/SZ32 in 6:4); svm.c io_interception(): port = info1 >> 16.
constexpr uint64_t kSvmIoIn = 0x1;
constexpr uint64_t kSvmIoString = 0x4;
constexpr uint64_t kSvmIoRep = 0x8;
constexpr int kSvmIoSizeShift = 4;
// svm.c cr_interception(): with decode assists exit_info1 bit 63 (CR_VALID) says 3:0 hold the GPR.
constexpr uint64_t kSvmCrValid = 1ull << 63;
constexpr uint64_t kSvmExitInfoRegMask = 0xf;
// asm/svm.h AVIC_UNACCEL_ACCESS_OFFSET_MASK; avic.c: write = (exit_info1 >> 32) & 1.
constexpr uint64_t kAvicOffsetMask = 0xff0;
constexpr int kAvicWriteShift = 32;
// asm/apicdef.h APIC_ICR: an AVIC incomplete IPI is an ICR write the hardware did not deliver.
constexpr uint32_t kApicIcr = 0x300;
// arch/x86/include/asm/kvm_host.h PFERR_*: the #NPF error code in exit_info1.
constexpr uint64_t kPferrPresent = 1u << 0;
constexpr uint64_t kPferrWrite = 1u << 1;
constexpr uint64_t kPferrRsvd = 1u << 3;
constexpr uint64_t kPferrFetch = 1u << 4;

// Access codes of the kinds (stored in QualDetail::access).
constexpr uint8_t kApicTypeWrite = 1;  // APIC_ACCESS types 0-15 as the SDM numbers them
constexpr uint8_t kApicIncompleteIpi = 16;
constexpr uint8_t kVectorEoi = 8;                // intr_info types are 0-7
constexpr uint8_t kCrMovTo = 0, kCrMovFrom = 1;  // CONTROL_REG_ACCESS_TYPE values; 2 clts, 3 lmsw
constexpr uint8_t kIoIn = 1, kIoString = 2, kIoRep = 4;
constexpr uint8_t kEptRead = 1, kEptWrite = 2, kEptFetch = 4, kEptPresent = 8, kEptReserved = 16;
constexpr uint32_t kNoGpr = 0xff;

struct Named {
  uint32_t key;
  std::string_view name;
};

// Local APIC registers (arch/x86/include/asm/apicdef.h offsets; the SDM's short names).
constexpr Named kApicRegs[] = {
    {0x020, "ID"},   {0x030, "LVR"},    {0x080, "TPR"},   {0x090, "APR"},     {0x0a0, "PPR"},   {0x0b0, "EOI"},
    {0x0c0, "RRR"},  {0x0d0, "LDR"},    {0x0e0, "DFR"},   {0x0f0, "SPIV"},    {0x280, "ESR"},   {0x2f0, "LVTCMCI"},
    {0x300, "ICR"},  {0x310, "ICR2"},   {0x320, "LVTT"},  {0x330, "LVTTHMR"}, {0x340, "LVTPC"}, {0x350, "LVT0"},
    {0x360, "LVT1"}, {0x370, "LVTERR"}, {0x380, "TMICT"}, {0x390, "TMCCT"},   {0x3e0, "TDCR"},  {0x3f0, "SELF_IPI"},
};

// arch/x86/include/asm/trapnr.h X86_TRAP_*.
constexpr std::string_view kExceptions[32] = {"#DE", "#DB",  "NMI", "#BP", "#OF", "#BR", "#UD", "#NM",
                                              "#DF", "#CSO", "#TS", "#NP", "#SS", "#GP", "#PF", "#SPURIOUS",
                                              "#MF", "#AC",  "#MC", "#XF", "#VE", "#CP", "",    "",
                                              "",    "",     "",    "",    "",    "#VC", "",    ""};

// Linux host system vectors, arch/x86/include/asm/irq_vectors.h (stable 0xec-0xff since 4.x).
constexpr Named kHostVectors[] = {
    {0xec, "LOCAL_TIMER"},
    {0xed, "HYPERV_STIMER0"},
    {0xee, "HYPERV_REENLIGHTENMENT"},
    {0xef, "MANAGED_IRQ_SHUTDOWN"},
    {0xf0, "POSTED_INTR_NESTED"},
    {0xf1, "POSTED_INTR_WAKEUP"},
    {0xf2, "POSTED_INTR"},
    {0xf3, "HYPERVISOR_CALLBACK"},
    {0xf4, "DEFERRED_ERROR"},
    {0xf6, "IRQ_WORK"},
    {0xf7, "X86_PLATFORM_IPI"},
    {0xf8, "REBOOT"},
    {0xf9, "THRESHOLD_APIC"},
    {0xfa, "THERMAL_APIC"},
    {0xfb, "CALL_FUNCTION_SINGLE"},
    {0xfc, "CALL_FUNCTION"},
    {0xfd, "RESCHEDULE"},
    {0xfe, "ERROR_APIC"},
    {0xff, "SPURIOUS_APIC"},
};
constexpr uint32_t kFirstExternalVector = 0x20;  // irq_vectors.h FIRST_EXTERNAL_VECTOR

// intr_info types (asm/vmx.h INTR_TYPE_*, bits 10:8) and our EOI.
constexpr std::string_view kVectorTypes[] = {
    "external interrupt", "reserved",           "NMI",
    "hardware exception", "software interrupt", "privileged software exception",
    "software exception", "other event",        "EOI (virtual)"};

constexpr std::string_view kGprs[16] = {"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
                                        "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};

std::string_view Lookup(std::span<const Named> table, uint32_t key) {
  for (const auto& n : table) {
    if (n.key == key) return n.name;
  }
  return {};
}

class Out {
 public:
  explicit Out(QualDetail* out) : out_(out) {}
  void Add(QualKind kind, uint64_t key, uint8_t access, uint32_t size = 0) {
    if (skip_ & Bit(kind)) return;
    if (n_ < kMaxQualDetails) out_[n_++] = QualDetail{kind, access, size, key};
  }
  // Kinds a detail event of the exit already gives: not derived from the qualification again.
  void Skip(QualKind kind) { skip_ |= Bit(kind); }
  int n() const { return n_; }

 private:
  static unsigned Bit(QualKind k) { return 1u << (static_cast<unsigned>(k) - kFirstQualKind); }
  QualDetail* out_;
  int n_ = 0;
  unsigned skip_ = 0;
};

void AddVector(Out* o, uint8_t type, uint32_t vector) {
  o->Add(QualKind::kVector, (static_cast<uint64_t>(type) << 8) | vector, type);
}

void DecodeVmx(const ExitSample& s, uint64_t gpa, Out* o) {
  const uint64_t q = s.info1;
  switch (s.reason & kVmxBasicReasonMask) {
    case kVmxExceptionNmi:
    case kVmxExternalInterrupt:
      if (s.intr_info & kIntrInfoValid) {
        AddVector(o, static_cast<uint8_t>((s.intr_info & kIntrInfoTypeMask) >> 8), s.intr_info & kIntrInfoVectorMask);
      }
      break;
    case kVmxEoiInduced: AddVector(o, kVectorEoi, static_cast<uint32_t>(q & kEoiVectorMask)); break;
    case kVmxCrAccess: {
      uint8_t type = static_cast<uint8_t>((q >> kCrTypeShift) & 3);
      uint32_t gpr = type <= kCrMovFrom ? static_cast<uint32_t>((q >> kCrRegShift) & 0xf) : kNoGpr;
      o->Add(QualKind::kCr, q & kCrNumMask, type, gpr);
      break;
    }
    case kVmxDrAccess: o->Add(QualKind::kDr, q & kDrNumMask, (q & kDrMovFrom) ? 0 : 1); break;
    case kVmxIoInstruction: {
      uint8_t access =
          ((q & kVmxIoIn) ? kIoIn : 0) | ((q & kVmxIoString) ? kIoString : 0) | ((q & kVmxIoRep) ? kIoRep : 0);
      o->Add(QualKind::kIo, (q >> kIoPortShift) & 0xffff, access, static_cast<uint32_t>((q & kVmxIoSizeMask) + 1));
      break;
    }
    case kVmxApicAccess:
      o->Add(QualKind::kApic, q & kApicAccessOffsetMask, static_cast<uint8_t>((q >> kApicAccessTypeShift) & 0xf));
      break;
    case kVmxApicWrite: o->Add(QualKind::kApic, q & kApicWriteOffsetMask, kApicTypeWrite); break;
    case kVmxEptViolation: {
      uint8_t access = (q & kEptAccWrite)   ? kEptWrite
                       : (q & kEptAccInstr) ? kEptFetch
                       : (q & kEptAccRead)  ? kEptRead
                                            : 0;
      if (q & kEptProtMask) access |= kEptPresent;
      o->Add(QualKind::kEpt, gpa, access);
      break;
    }
    default: break;
  }
}

void DecodeSvm(const ExitSample& s, Out* o) {
  const uint64_t i1 = s.info1;
  const uint32_t r = s.reason;
  if (r >= kSvmReadCr0 && r < kSvmReadDr0) {
    uint32_t gpr = (i1 & kSvmCrValid) ? static_cast<uint32_t>(i1 & kSvmExitInfoRegMask) : kNoGpr;
    o->Add(QualKind::kCr, r & 0xf, r >= kSvmWriteCr0 ? kCrMovTo : kCrMovFrom, gpr);
  } else if (r >= kSvmReadDr0 && r < kSvmExcp0) {
    o->Add(QualKind::kDr, r & 0xf, r >= kSvmWriteDr0 ? 1 : 0);
  } else if (r >= kSvmExcp0 && r < kSvmExcp0 + 32) {
    AddVector(o, 3, r - kSvmExcp0);  // INTR_TYPE_HARD_EXCEPTION
  } else if (r == kSvmNmi) {
    AddVector(o, 2, 2);  // INTR_TYPE_NMI_INTR, vector 2
  } else if (r == kSvmCr0SelWrite) {
    o->Add(QualKind::kCr, 0, kCrMovTo, kNoGpr);
  } else if (r == kSvmIoio) {
    uint8_t access =
        ((i1 & kSvmIoIn) ? kIoIn : 0) | ((i1 & kSvmIoString) ? kIoString : 0) | ((i1 & kSvmIoRep) ? kIoRep : 0);
    uint32_t sz = static_cast<uint32_t>((i1 >> kSvmIoSizeShift) & 7);  // 1, 2 or 4: one-hot
    o->Add(QualKind::kIo, (i1 >> kIoPortShift) & 0xffff, access, sz == 4 ? 4 : sz == 2 ? 2 : 1);
  } else if (r == kSvmNpf) {
    uint8_t access = (i1 & kPferrWrite) ? kEptWrite : (i1 & kPferrFetch) ? kEptFetch : kEptRead;
    if (i1 & kPferrPresent) access |= kEptPresent;
    if (i1 & kPferrRsvd) access |= kEptReserved;
    o->Add(QualKind::kEpt, s.info2, access);
  } else if (r == kSvmAvicUnaccelerated) {
    o->Add(QualKind::kApic, i1 & kAvicOffsetMask, ((i1 >> kAvicWriteShift) & 1) ? kApicTypeWrite : 0);
  } else if (r == kSvmAvicIncompleteIpi) {
    o->Add(QualKind::kApic, kApicIcr, kApicIncompleteIpi);
  }
}

std::string ApicAccessText(uint8_t a) {
  switch (a) {
    case 0: return "read";
    case 1: return "write";
    case 2: return "fetch";
    case 3: return "event delivery";
    case 10: return "physical, event delivery";
    case 15: return "physical, instruction";
    case kApicIncompleteIpi: return "write (IPI not delivered by AVIC)";
    default: return fmt::format("type {}", a);
  }
}

std::string EptAccessText(uint8_t a) {
  std::string out = (a & kEptWrite) ? "write" : (a & kEptFetch) ? "fetch" : (a & kEptRead) ? "read" : "none";
  if (a & kEptReserved) return out + ", reserved bit (MMIO)";
  return out + ((a & kEptPresent) ? ", present" : ", not present");
}

}  // namespace

int DecodeQualification(const ExitSample& s, QualDetail out[kMaxQualDetails]) {
  Out o(out);
  uint64_t gpa = kUnknownGpa;
  for (int i = 0; i < s.detail_count; ++i) {
    const ExitDetail& d = s.details[i];
    switch (d.kind) {
      case EventKind::kApic:
        // kvm_apic's reg is the xAPIC offset (arch/x86/kvm/trace.h kvm_apic, lapic.c).
        o.Add(QualKind::kApic, d.aux, d.write ? kApicTypeWrite : 0);
        break;
      case EventKind::kCr: o.Skip(QualKind::kCr); break;
      case EventKind::kPio: o.Skip(QualKind::kIo); break;
      // vmx.c handle_ept_violation() / svm.c npf_interception(): kvm_page_fault's address is the GPA.
      case EventKind::kPageFault:
        if (gpa == kUnknownGpa) gpa = d.key;
        break;
      default: break;
    }
  }
  if (o.n()) o.Skip(QualKind::kApic);  // kvm_apic named the register(s)
  if (s.isa == Isa::kVmx && !(s.reason & kVmxFailedVmentry)) DecodeVmx(s, gpa, &o);
  if (s.isa == Isa::kSvm) DecodeSvm(s, &o);
  return o.n();
}

std::string ApicRegisterName(uint32_t offset) {
  if (auto n = Lookup(kApicRegs, offset); !n.empty()) return std::string(n);
  // apicdef.h APIC_ISR 0x100, APIC_TMR 0x180, APIC_IRR 0x200: eight 32-bit registers 0x10 apart.
  for (auto [base, name] : {Named{0x100, "ISR"}, Named{0x180, "TMR"}, Named{0x200, "IRR"}}) {
    if (offset >= base && offset < base + 0x80 && offset % 0x10 == 0)
      return std::string(name) + std::to_string((offset - base) / 0x10);
  }
  return {};
}

std::string VectorName(uint32_t vector, bool host_interrupt) {
  if (host_interrupt) {
    if (auto n = Lookup(kHostVectors, vector); !n.empty()) return std::string(n);
    return vector >= kFirstExternalVector ? "device IRQ" : "";
  }
  return vector < 32 ? std::string(kExceptions[vector]) : "";
}

QualDetailText DescribeQualDetail(const QualDetail& d) {
  QualDetailText t;
  t.key_value = d.kind == QualKind::kVector ? (d.key & 0xff) : d.key;
  t.size = d.kind == QualKind::kIo ? d.size : 0;
  switch (d.kind) {
    case QualKind::kApic:
      t.kind = "apic";
      t.key = fmt::format("{:#x}", d.key);
      t.name = ApicRegisterName(static_cast<uint32_t>(d.key));
      t.access = ApicAccessText(d.access);
      break;
    case QualKind::kVector: {
      uint32_t vector = static_cast<uint32_t>(d.key & 0xff);
      t.kind = "vector";
      t.key = fmt::format("{:#x}", vector);
      t.name = d.access == kVectorEoi ? "" : VectorName(vector, d.access == 0);
      t.access = d.access < std::size(kVectorTypes) ? std::string(kVectorTypes[d.access]) : "?";
      break;
    }
    case QualKind::kDr:
      t.kind = "dr";
      t.key = std::to_string(d.key);
      t.name = fmt::format("dr{}", d.key);
      t.access = d.access ? "write" : "read";
      break;
    case QualKind::kCr: {
      static constexpr std::string_view kTypes[] = {"mov-to", "mov-from", "clts", "lmsw"};
      t.kind = "cr_exit";
      t.key = std::to_string(d.key);
      t.name = CrName(static_cast<uint32_t>(d.key));
      t.access = std::string(kTypes[d.access & 3]);
      if (d.size < 16) t.access += fmt::format(" ({})", kGprs[d.size]);
      break;
    }
    case QualKind::kIo: {
      t.kind = "io_exit";
      t.key = fmt::format("{:#x}", d.key);
      t.name = IoPortName(static_cast<uint32_t>(d.key));
      std::string insn = (d.access & kIoIn) ? "in" : "out";
      if (d.access & kIoString) insn += "s";
      t.access = (d.access & kIoRep) ? "rep " + insn : insn;
      break;
    }
    case QualKind::kEpt:
      t.kind = "ept";
      t.key_known = d.key != kUnknownGpa;
      t.key = t.key_known ? fmt::format("{:#x}", d.key) : "-";
      t.access = EptAccessText(d.access);
      break;
  }
  return t;
}

}  // namespace exitscope
