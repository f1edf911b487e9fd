// Human names for the numbers arm64 KVM's detail tracepoints carry: trapped system registers
// (kvm_sys_access / kvm_handle_sys_reg, by sys_reg() encoding), HVC/SMC function IDs (kvm_hvc_arm64's
// r0: PSCI, SMCCC arch and KVM vendor calls) and WFI/WFE. In: a raw number. Out: a name, "" when we
// have none (callers print the number; a register then reads as the assembler's S<op0>_<op1>_C<n>_C<m>_<op2>).
// Assumption: names follow the kernel's headers (asm/sysreg.h without SYS_, uapi/linux/psci.h,
// linux/arm-smccc.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace exitscope {

// "ACTLR_EL1", "CNTP_CTL_EL0", "PMEVCNTR3_EL0", "DC_CISW", "ICC_SGI1R_EL1" … or "".
std::string Arm64SysRegName(uint32_t encoding);
// The assembler's generic spelling of any register: "S3_0_C1_C0_1".
std::string Arm64SysRegGenericName(uint32_t encoding);
// "(3,0,1,0,1)": Op0..Op2 as kvm_sys_access prints them.
std::string Arm64SysRegTuple(uint32_t encoding);
// What rules ask of a trapped register: the PMU's, the generic timer's, the GICv3 CPU interface's.
bool IsArm64PmuSysReg(uint32_t encoding);
bool IsArm64TimerSysReg(uint32_t encoding);
bool IsArm64GicSysReg(uint32_t encoding);
// "PSCI_VERSION", "PSCI_CPU_ON64", "SMCCC_ARCH_WORKAROUND_1", "KVM_PTP" … or "" (function ID in w0).
std::string_view Arm64HvcFunctionName(uint64_t r0);
// kvm_wfx_arm64's is_wfe: "WFI" / "WFE".
std::string_view Arm64WfxName(bool is_wfe);

}  // namespace exitscope
