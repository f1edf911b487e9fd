// Breakdowns an exit carries itself: the APIC register of APIC_WRITE/APIC_ACCESS (and AVIC) exits,
// the access and GPA of EPT violations / NPFs, exception and interrupt vectors, the DR and CR of
// MOV DR / CR exits and the port of I/O exits, decoded from kvm_exit's exit_reason, info1 (VMX exit
// qualification / SVM exit_info1), info2 and intr_info, sharpened by the exit's kvm_apic and
// kvm_page_fault events. In: one ExitSample. Out: detail keys plus their names, as msr_names.h
// gives for kvm_msr. Assumption: kvm_exit's info1/info2/intr_info are what arch/x86/kvm/vmx/vmx.c
// vmx_get_exit_info() and svm/svm.c svm_get_exit_info() store (kernel >= 5.11). Older kernels and
// the kvm plugin's text ("info A B") have no intr_info: their exits get no vector breakdown.
#pragma once

#include <cstdint>
#include <string>

#include "model/exit_sample.h"

namespace exitscope {

// Detail kinds decoded from the exit, numbered past EventKind so that one detail map keys both.
enum class QualKind : uint8_t {
  kApic = 64,  // key: APIC register offset; access: QualApicAccess
  kVector,     // key: vector; access: QualVectorType
  kDr,         // key: DR number; access: 1 = write (MOV to DR)
  kCr,         // key: CR number; access: QualCrAccess; size: GPR (VMX) or kNoGpr
  kIo,         // key: port; access: QualIoAccess bits; size: bytes
  kEpt,        // key: GPA or kUnknownGpa; access: QualEptAccess bits
};
inline constexpr uint8_t kFirstQualKind = static_cast<uint8_t>(QualKind::kApic);
inline constexpr uint64_t kUnknownGpa = UINT64_MAX - 1;

// Plain (no initializers): filled per exit into a stack array, on the report's hot path.
struct QualDetail {
  QualKind kind;
  uint8_t access;
  uint32_t size;
  uint64_t key;
};

inline constexpr int kMaxQualDetails = ExitSample::kMaxDetails + 1;

// The breakdowns of `s` into out[0..n), n returned. kvm_apic details give APIC registers (then the
// qualification is not read again); a CR / port already given by the exit's kvm_cr / kvm_pio is not
// derived again, so a trace with both is not counted twice.
int DecodeQualification(const ExitSample& s, QualDetail out[kMaxQualDetails]);

struct QualDetailText {
  std::string kind;        // "apic", "vector", "dr", "cr_exit", "io_exit", "ept"
  std::string key;         // how text shows the key: "0x380", "0xec", "4", "-" (unknown GPA)
  std::string name;        // "TMICT", "LOCAL_TIMER", "#PF", "dr7", "cr4", "PIT ch0" …
  std::string access;      // "write", "external interrupt", "mov-to (rax)", "in rep string" …
  bool key_known = true;   // false: JSON prints the key as null
  uint64_t key_value = 0;  // the key as a number (a vector without its type bits)
  uint32_t size = 0;       // bytes (io_exit); 0 for the other kinds
};
QualDetailText DescribeQualDetail(const QualDetail& d);

// Local APIC register at an xAPIC page offset ("TMICT", "ICR", "EOI", "TPR", "ISR3" …), or "".
std::string ApicRegisterName(uint32_t offset);
// "#PF", "#UD", "NMI" … for vectors 0-31; Linux host system vectors ("LOCAL_TIMER", "RESCHEDULE" …)
// for external interrupts; "" otherwise.
std::string VectorName(uint32_t vector, bool host_interrupt);

}  // namespace exitscope
