// The arm64 KVM facts exit decoding and the rules key on: kvm_exit's `ret` (the exit type) and
// `esr_ec` (the exception class of a TRAP), how the two fold into the one exit-reason code every
// stage carries, and the ESR syndrome fields the breakdowns read. Names for display come from
// decode/exit_reasons.h (the class names below are also the kernel's and perf's spelling).
// Sources: arch/arm64/include/asm/kvm_asm.h (ARM_EXCEPTION_*), arch/arm64/include/asm/virt.h
// (HVC_STUB_ERR), arch/arm64/include/asm/esr.h (ESR_ELx_EC_*, ISS layouts), arch/arm64/include/
// asm/sysreg.h (sys_reg() encoding), tools/perf/arch/arm64/util/arm64_exception_types.h (perf's names).
// Assumption: kvm_exit is arch/arm64/kvm/trace_arm.h's (ret, esr_ec, vcpu_pc), as since Linux 4.x.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace exitscope {

// kvm_asm.h ARM_EXCEPTION_*: kvm_exit's `ret`. Bit 31 (ARM_EXIT_WITH_SERROR_BIT) flags an SError
// pending alongside; ARM_EXCEPTION_CODE() masks it off.
inline constexpr uint32_t kArmExceptionIrq = 0;
inline constexpr uint32_t kArmExceptionEl1Serror = 1;
inline constexpr uint32_t kArmExceptionTrap = 2;
inline constexpr uint32_t kArmExceptionIl = 3;
inline constexpr uint32_t kArmExceptionHypGone = 0xbadca11;  // virt.h HVC_STUB_ERR
inline constexpr uint32_t kArmExitWithSerrorBit = 1u << 31;

// esr.h ESR_ELx_EC_*: the classes rules and the pairer name; every class's name is in the table.
inline constexpr uint32_t kEsrEcUnknown = 0x00;
inline constexpr uint32_t kEsrEcWfx = 0x01;
inline constexpr uint32_t kEsrEcFpAsimd = 0x07;
inline constexpr uint32_t kEsrEcHvc64 = 0x16;
inline constexpr uint32_t kEsrEcSmc64 = 0x17;
inline constexpr uint32_t kEsrEcSys64 = 0x18;
inline constexpr uint32_t kEsrEcSve = 0x19;
inline constexpr uint32_t kEsrEcIabtLow = 0x20;
inline constexpr uint32_t kEsrEcDabtLow = 0x24;
inline constexpr uint32_t kEsrEcBrk64 = 0x3c;
inline constexpr uint32_t kEsrEcMax = 0x3f;  // ESR_ELx_EC_MAX: EC is 6 bits
inline constexpr int kEsrEcShift = 26;       // ESR_ELx_EC_SHIFT

struct Arm64Name {
  uint32_t code;
  std::string_view name;
};

// esr.h ESR_ELx_EC_* names (mainline, 6.x). kvm_exit's print fmt (kvm_arm_exception_class in
// asm/kvm_arm.h) and perf kvm stat name a subset with the same spelling.
inline constexpr Arm64Name kArm64ExceptionClasses[] = {
    {0x00, "UNKNOWN"},     {0x01, "WFx"},         {0x03, "CP15_32"},     {0x04, "CP15_64"},     {0x05, "CP14_MR"},
    {0x06, "CP14_LS"},     {0x07, "FP_ASIMD"},    {0x08, "CP10_ID"},     {0x09, "PAC"},         {0x0c, "CP14_64"},
    {0x0d, "BTI"},         {0x0e, "ILL"},         {0x11, "SVC32"},       {0x12, "HVC32"},       {0x13, "SMC32"},
    {0x15, "SVC64"},       {0x16, "HVC64"},       {0x17, "SMC64"},       {0x18, "SYS64"},       {0x19, "SVE"},
    {0x1a, "ERET"},        {0x1c, "FPAC"},        {0x1d, "SME"},         {0x1f, "IMP_DEF"},     {0x20, "IABT_LOW"},
    {0x21, "IABT_CUR"},    {0x22, "PC_ALIGN"},    {0x24, "DABT_LOW"},    {0x25, "DABT_CUR"},    {0x26, "SP_ALIGN"},
    {0x27, "MOPS"},        {0x28, "FP_EXC32"},    {0x2c, "FP_EXC64"},    {0x2f, "SERROR"},      {0x30, "BREAKPT_LOW"},
    {0x31, "BREAKPT_CUR"}, {0x32, "SOFTSTP_LOW"}, {0x33, "SOFTSTP_CUR"}, {0x34, "WATCHPT_LOW"}, {0x35, "WATCHPT_CUR"},
    {0x38, "BKPT32"},      {0x3a, "VECTOR32"},    {0x3c, "BRK64"},
};

// The exit types that are not TRAPs, as perf kvm stat prints them (kvm_arm_exception_type in perf's
// arm64_exception_types.h; the kernel's own print fmt of kvm_exit spells IL "ILLEGAL" there too).
inline constexpr Arm64Name kArm64ExitTypes[] = {
    {kArmExceptionIrq, "IRQ"},    {kArmExceptionEl1Serror, "SERROR"}, {kArmExceptionTrap, "TRAP"},
    {kArmExceptionIl, "ILLEGAL"}, {kArmExceptionHypGone, "HYP_GONE"},
};

// One code per exit reason, as perf kvm stat keys them: a TRAP is its exception class (0..0x3f),
// any other exit type is kArm64NonTrapBase + ARM_EXCEPTION_CODE(ret) (IRQ = 0x100).
inline constexpr uint32_t kArm64NonTrapBase = 0x100;
inline constexpr uint32_t kArm64ExitIrq = kArm64NonTrapBase + kArmExceptionIrq;

inline constexpr uint32_t Arm64ExitKey(uint32_t ret, uint32_t esr_ec) {
  const uint32_t code = ret & ~kArmExitWithSerrorBit;
  return code == kArmExceptionTrap ? (esr_ec & kEsrEcMax) : kArm64NonTrapBase + code;
}
inline constexpr bool Arm64IsTrap(uint32_t key) { return key < kArm64NonTrapBase; }

// sysreg.h sys_reg(op0, op1, crn, crm, op2): the encoding kvm_sys_access's fields and a SYS64 ESR
// map to (the kernel's SYS_* constants).
inline constexpr uint32_t kSysRegOp0Shift = 19, kSysRegOp1Shift = 16, kSysRegCrnShift = 12, kSysRegCrmShift = 8,
                          kSysRegOp2Shift = 5;
inline constexpr uint32_t SysRegEncoding(uint32_t op0, uint32_t op1, uint32_t crn, uint32_t crm, uint32_t op2) {
  return (op0 << kSysRegOp0Shift) | (op1 << kSysRegOp1Shift) | (crn << kSysRegCrnShift) | (crm << kSysRegCrmShift) |
         (op2 << kSysRegOp2Shift);
}
struct SysRegFields {
  uint32_t op0, op1, crn, crm, op2;
};
inline constexpr SysRegFields SysRegFieldsOf(uint32_t enc) {
  return {(enc >> kSysRegOp0Shift) & 3, (enc >> kSysRegOp1Shift) & 7, (enc >> kSysRegCrnShift) & 15,
          (enc >> kSysRegCrmShift) & 15, (enc >> kSysRegOp2Shift) & 7};
}

// esr.h ESR_ELx_SYS64_ISS_*: a SYS64 trap's register (Op0 21:20, Op2 19:17, Op1 16:14, CRn 13:10,
// CRm 4:1) and direction (bit 0: 1 = read, MRS), what kvm_handle_sys_reg's hsr holds.
inline constexpr uint32_t SysRegFromEsr(uint64_t esr) {
  return SysRegEncoding(static_cast<uint32_t>((esr >> 20) & 3), static_cast<uint32_t>((esr >> 14) & 7),
                        static_cast<uint32_t>((esr >> 10) & 15), static_cast<uint32_t>((esr >> 1) & 15),
                        static_cast<uint32_t>((esr >> 17) & 7));
}
inline constexpr bool SysRegEsrIsRead(uint64_t esr) { return (esr & 1) != 0; }  // ISS_DIR_READ

// A stage-2 abort as kvm_guest_fault's hsr (the ESR) tells it: EC IABT_LOW is a fetch, DABT_LOW a
// data access whose direction is ESR_ELx_WNR (bit 6).
enum class Arm64FaultAccess : uint8_t { kRead = 0, kWrite = 1, kFetch = 2, kOther = 3 };
inline constexpr uint64_t kEsrWnr = 1u << 6;  // esr.h ESR_ELx_WNR
inline constexpr Arm64FaultAccess FaultAccessFromEsr(uint64_t esr) {
  const uint64_t ec = (esr >> kEsrEcShift) & kEsrEcMax;
  if (ec == kEsrEcIabtLow) return Arm64FaultAccess::kFetch;
  if (ec == kEsrEcDabtLow) return (esr & kEsrWnr) ? Arm64FaultAccess::kWrite : Arm64FaultAccess::kRead;
  return Arm64FaultAccess::kOther;
}

}  // namespace exitscope
