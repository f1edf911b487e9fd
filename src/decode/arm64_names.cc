#include "decode/arm64_names.h"

#include <fmt/format.h>

#include "decode/arm64_exit_codes.h"

namespace exitscope {
namespace {

struct Reg {
  uint8_t op0, op1, crn, crm, op2;
  std::string_view name;
};

// arch/arm64/include/asm/sysreg.h SYS_* (and the generated sysreg defs), without the SYS_ prefix:
// the registers a guest kernel traps on most (ID registers, VM controls under HCR_EL2.TVM/TID*,
// set/way cache maintenance, the generic timer, the PMU, GICv3 system registers, debug).
constexpr Reg kRegs[] = {
    {3, 0, 0, 0, 0, "MIDR_EL1"},         {3, 0, 0, 0, 5, "MPIDR_EL1"},        {3, 0, 0, 0, 6, "REVIDR_EL1"},
    {3, 0, 0, 4, 0, "ID_AA64PFR0_EL1"},  {3, 0, 0, 4, 1, "ID_AA64PFR1_EL1"},  {3, 0, 0, 4, 4, "ID_AA64ZFR0_EL1"},
    {3, 0, 0, 5, 0, "ID_AA64DFR0_EL1"},  {3, 0, 0, 5, 1, "ID_AA64DFR1_EL1"},  {3, 0, 0, 6, 0, "ID_AA64ISAR0_EL1"},
    {3, 0, 0, 6, 1, "ID_AA64ISAR1_EL1"}, {3, 0, 0, 6, 2, "ID_AA64ISAR2_EL1"}, {3, 0, 0, 7, 0, "ID_AA64MMFR0_EL1"},
    {3, 0, 0, 7, 1, "ID_AA64MMFR1_EL1"}, {3, 0, 0, 7, 2, "ID_AA64MMFR2_EL1"}, {3, 1, 0, 0, 0, "CCSIDR_EL1"},
    {3, 1, 0, 0, 1, "CLIDR_EL1"},        {3, 2, 0, 0, 0, "CSSELR_EL1"},       {3, 3, 0, 0, 1, "CTR_EL0"},
    {3, 3, 0, 0, 7, "DCZID_EL0"},        {3, 0, 1, 0, 0, "SCTLR_EL1"},        {3, 0, 1, 0, 1, "ACTLR_EL1"},
    {3, 0, 1, 0, 2, "CPACR_EL1"},        {3, 0, 2, 0, 0, "TTBR0_EL1"},        {3, 0, 2, 0, 1, "TTBR1_EL1"},
    {3, 0, 2, 0, 2, "TCR_EL1"},          {3, 0, 5, 1, 0, "AFSR0_EL1"},        {3, 0, 5, 1, 1, "AFSR1_EL1"},
    {3, 0, 5, 2, 0, "ESR_EL1"},          {3, 0, 6, 0, 0, "FAR_EL1"},          {3, 0, 10, 2, 0, "MAIR_EL1"},
    {3, 0, 10, 3, 0, "AMAIR_EL1"},       {3, 0, 12, 0, 0, "VBAR_EL1"},        {3, 0, 13, 0, 1, "CONTEXTIDR_EL1"},
    {1, 0, 7, 6, 2, "DC_ISW"},           {1, 0, 7, 10, 2, "DC_CSW"},          {1, 0, 7, 14, 2, "DC_CISW"},
    {3, 0, 14, 1, 0, "CNTKCTL_EL1"},     {3, 3, 14, 0, 0, "CNTFRQ_EL0"},      {3, 3, 14, 0, 1, "CNTPCT_EL0"},
    {3, 3, 14, 0, 2, "CNTVCT_EL0"},      {3, 3, 14, 2, 0, "CNTP_TVAL_EL0"},   {3, 3, 14, 2, 1, "CNTP_CTL_EL0"},
    {3, 3, 14, 2, 2, "CNTP_CVAL_EL0"},   {3, 3, 14, 3, 0, "CNTV_TVAL_EL0"},   {3, 3, 14, 3, 1, "CNTV_CTL_EL0"},
    {3, 3, 14, 3, 2, "CNTV_CVAL_EL0"},   {3, 3, 9, 12, 0, "PMCR_EL0"},        {3, 3, 9, 12, 1, "PMCNTENSET_EL0"},
    {3, 3, 9, 12, 2, "PMCNTENCLR_EL0"},  {3, 3, 9, 12, 3, "PMOVSCLR_EL0"},    {3, 3, 9, 12, 4, "PMSWINC_EL0"},
    {3, 3, 9, 12, 5, "PMSELR_EL0"},      {3, 3, 9, 12, 6, "PMCEID0_EL0"},     {3, 3, 9, 12, 7, "PMCEID1_EL0"},
    {3, 3, 9, 13, 0, "PMCCNTR_EL0"},     {3, 3, 9, 13, 1, "PMXEVTYPER_EL0"},  {3, 3, 9, 13, 2, "PMXEVCNTR_EL0"},
    {3, 3, 9, 14, 0, "PMUSERENR_EL0"},   {3, 0, 9, 14, 1, "PMINTENSET_EL1"},  {3, 0, 9, 14, 2, "PMINTENCLR_EL1"},
    {3, 3, 9, 14, 3, "PMOVSSET_EL0"},    {3, 3, 14, 15, 7, "PMCCFILTR_EL0"},  {3, 0, 4, 6, 0, "ICC_PMR_EL1"},
    {3, 0, 12, 11, 1, "ICC_DIR_EL1"},    {3, 0, 12, 11, 5, "ICC_SGI1R_EL1"},  {3, 0, 12, 11, 6, "ICC_ASGI1R_EL1"},
    {3, 0, 12, 11, 7, "ICC_SGI0R_EL1"},  {3, 0, 12, 12, 0, "ICC_IAR1_EL1"},   {3, 0, 12, 12, 1, "ICC_EOIR1_EL1"},
    {3, 0, 12, 12, 4, "ICC_CTLR_EL1"},   {3, 0, 12, 12, 5, "ICC_SRE_EL1"},    {3, 0, 12, 12, 7, "ICC_IGRPEN1_EL1"},
    {2, 0, 0, 2, 2, "MDSCR_EL1"},        {2, 0, 1, 0, 4, "OSLAR_EL1"},        {2, 0, 1, 1, 4, "OSLSR_EL1"},
    {2, 0, 1, 3, 4, "OSDLR_EL1"},        {2, 3, 0, 1, 0, "MDCCSR_EL0"},
};

struct Fn {
  uint32_t id;
  std::string_view name;
};

// include/uapi/linux/psci.h PSCI_0_2_FN* / PSCI_1_x_FN* (32-bit base 0x84000000, 64-bit 0xc4000000);
// include/linux/arm-smccc.h ARM_SMCCC_VERSION_FUNC_ID, ARCH_FEATURES, ARCH_SOC_ID,
// ARCH_WORKAROUND_1/2/3, the KVM vendor hypervisor service (features, PTP) and PV time.
constexpr Fn kFunctions[] = {
    {0x80000000, "SMCCC_VERSION"},
    {0x80000001, "SMCCC_ARCH_FEATURES"},
    {0x80000002, "SMCCC_ARCH_SOC_ID"},
    {0x80008000, "SMCCC_ARCH_WORKAROUND_1"},
    {0x80007fff, "SMCCC_ARCH_WORKAROUND_2"},
    {0x80003fff, "SMCCC_ARCH_WORKAROUND_3"},
    {0x84000000, "PSCI_VERSION"},
    {0x84000001, "PSCI_CPU_SUSPEND"},
    {0x84000002, "PSCI_CPU_OFF"},
    {0x84000003, "PSCI_CPU_ON"},
    {0x84000004, "PSCI_AFFINITY_INFO"},
    {0x84000005, "PSCI_MIGRATE"},
    {0x84000006, "PSCI_MIGRATE_INFO_TYPE"},
    {0x84000007, "PSCI_MIGRATE_INFO_UP_CPU"},
    {0x84000008, "PSCI_SYSTEM_OFF"},
    {0x84000009, "PSCI_SYSTEM_RESET"},
    {0x8400000a, "PSCI_FEATURES"},
    {0x8400000b, "PSCI_CPU_FREEZE"},
    {0x8400000c, "PSCI_CPU_DEFAULT_SUSPEND"},
    {0x8400000d, "PSCI_NODE_HW_STATE"},
    {0x8400000e, "PSCI_SYSTEM_SUSPEND"},
    {0x8400000f, "PSCI_SET_SUSPEND_MODE"},
    {0x84000010, "PSCI_STAT_RESIDENCY"},
    {0x84000011, "PSCI_STAT_COUNT"},
    {0x84000012, "PSCI_SYSTEM_RESET2"},
    {0x84000013, "PSCI_MEM_PROTECT"},
    {0x84000014, "PSCI_MEM_PROTECT_CHECK_RANGE"},
    {0xc4000001, "PSCI_CPU_SUSPEND64"},
    {0xc4000003, "PSCI_CPU_ON64"},
    {0xc4000004, "PSCI_AFFINITY_INFO64"},
    {0xc4000005, "PSCI_MIGRATE64"},
    {0xc4000007, "PSCI_MIGRATE_INFO_UP_CPU64"},
    {0xc400000c, "PSCI_CPU_DEFAULT_SUSPEND64"},
    {0xc400000d, "PSCI_NODE_HW_STATE64"},
    {0xc400000e, "PSCI_SYSTEM_SUSPEND64"},
    {0xc4000010, "PSCI_STAT_RESIDENCY64"},
    {0xc4000011, "PSCI_STAT_COUNT64"},
    {0xc4000012, "PSCI_SYSTEM_RESET2_64"},
    {0xc5000020, "PV_TIME_FEATURES"},
    {0xc5000021, "PV_TIME_ST"},
    {0x86000000, "KVM_FEATURES"},
    {0x86000001, "KVM_PTP"},
    {0x8600ff01, "VENDOR_HYP_CALL_UID"},
};

// sysreg.h: PMEVCNTR<n>_EL0 = (3,3,14,8+n/8,n%8), PMEVTYPER<n>_EL0 = (3,3,14,12+n/8,n%8), n < 31.
std::string PmuEventRegName(const SysRegFields& f) {
  if (f.op0 != 3 || f.op1 != 3 || f.crn != 14 || f.crm < 8) return {};
  uint32_t n = (f.crm & 3) * 8 + f.op2;
  if (n > 30) return {};
  return fmt::format("{}{}_EL0", f.crm < 12 ? "PMEVCNTR" : "PMEVTYPER", n);
}

// sysreg.h DBG{B,W}{V,C}R<n>_EL1 = (2,0,0,n,4..7).
std::string DebugRegName(const SysRegFields& f) {
  if (f.op0 != 2 || f.op1 != 0 || f.crn != 0 || f.op2 < 4) return {};
  static constexpr std::string_view kNames[] = {"DBGBVR", "DBGBCR", "DBGWVR", "DBGWCR"};
  return fmt::format("{}{}_EL1", kNames[f.op2 - 4], f.crm);
}

}  // namespace

std::string Arm64SysRegName(uint32_t encoding) {
  const SysRegFields f = SysRegFieldsOf(encoding);
  for (const Reg& r : kRegs) {
    if (r.op0 == f.op0 && r.op1 == f.op1 && r.crn == f.crn && r.crm == f.crm && r.op2 == f.op2)
      return std::string(r.name);
  }
  if (auto n = PmuEventRegName(f); !n.empty()) return n;
  return DebugRegName(f);
}

std::string Arm64SysRegGenericName(uint32_t encoding) {
  const SysRegFields f = SysRegFieldsOf(encoding);
  return fmt::format("S{}_{}_C{}_C{}_{}", f.op0, f.op1, f.crn, f.crm, f.op2);
}

std::string Arm64SysRegTuple(uint32_t encoding) {
  const SysRegFields f = SysRegFieldsOf(encoding);
  return fmt::format("({},{},{},{},{})", f.op0, f.op1, f.crn, f.crm, f.op2);
}

bool IsArm64PmuSysReg(uint32_t encoding) {
  const SysRegFields f = SysRegFieldsOf(encoding);
  if (f.op0 != 3) return false;
  // PMCR_EL0 .. PMOVSSET_EL0 (CRn 9, CRm 12-14, PMINTEN* at op1 0), PMEV*/PMCCFILTR (CRn 14, CRm 8-15).
  if (f.crn == 9 && f.crm >= 12 && f.crm <= 14) return f.op1 == 3 || (f.op1 == 0 && f.crm == 14);
  return f.crn == 14 && f.op1 == 3 && f.crm >= 8;
}

bool IsArm64TimerSysReg(uint32_t encoding) {
  const SysRegFields f = SysRegFieldsOf(encoding);
  // CNT*_EL0 (op1 3, CRn 14, CRm 0-3) and CNTKCTL_EL1 (3,0,14,1,0).
  return f.op0 == 3 && f.crn == 14 && ((f.op1 == 3 && f.crm <= 3) || (f.op1 == 0 && f.crm == 1));
}

bool IsArm64GicSysReg(uint32_t encoding) {
  const SysRegFields f = SysRegFieldsOf(encoding);
  // ICC_* at EL1: CRn 12 CRm 8-12, and ICC_PMR_EL1 (3,0,4,6,0).
  return f.op0 == 3 && f.op1 == 0 &&
         ((f.crn == 12 && f.crm >= 8 && f.crm <= 12) || (f.crn == 4 && f.crm == 6 && f.op2 == 0));
}

std::string_view Arm64HvcFunctionName(uint64_t r0) {
  // SMCCC function IDs are 32 bits (w0); the upper half of x0 is ignored by the callee.
  const uint32_t id = static_cast<uint32_t>(r0);
  for (const Fn& f : kFunctions) {
    if (f.id == id) return f.name;
  }
  return {};
}

std::string_view Arm64WfxName(bool is_wfe) { return is_wfe ? "WFE" : "WFI"; }

}  // namespace exitscope
