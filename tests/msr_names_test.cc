#include "decode/msr_names.h"

#include <gtest/gtest.h>

namespace exitscope {
namespace {

TEST(MsrNamesTest, NamesCommonMsrs) {
  // msr-index.h's spelling without MSR_: MSR_IA32_TSC_DEADLINE, MSR_IA32_APICBASE, MSR_IA32_UCODE_REV.
  EXPECT_EQ(MsrName(0x10), "IA32_TSC");
  EXPECT_EQ(MsrName(0x6e0), "IA32_TSC_DEADLINE");
  EXPECT_EQ(MsrName(0x1b), "IA32_APICBASE");
  EXPECT_EQ(MsrName(0x8b), "IA32_UCODE_REV");
  EXPECT_EQ(MsrName(0x3a), "IA32_FEAT_CTL");
  EXPECT_EQ(MsrName(0x1d9), "IA32_DEBUGCTLMSR");
  EXPECT_EQ(MsrName(0x277), "IA32_CR_PAT");
  EXPECT_EQ(MsrName(0x48d), "IA32_VMX_TRUE_PINBASED_CTLS");
  EXPECT_EQ(MsrName(0xc0000080), "EFER");
  EXPECT_EQ(MsrName(0xc0000084), "SYSCALL_MASK");
  EXPECT_EQ(MsrName(0xc0000102), "KERNEL_GS_BASE");
  EXPECT_EQ(MsrName(0xc0010131), "AMD64_SEV");
  EXPECT_EQ(MsrName(0x4b564d01), "KVM_SYSTEM_TIME_NEW");
  EXPECT_EQ(MsrName(0x4b564d05), "KVM_POLL_CONTROL");
  // x2APIC: apicdef.h's register names (APIC_ICR, APIC_EOI, APIC_TMICT).
  EXPECT_EQ(MsrName(0x830), "X2APIC_ICR");
  EXPECT_EQ(MsrName(0x80b), "X2APIC_EOI");
  EXPECT_EQ(MsrName(0x838), "X2APIC_TMICT");
  EXPECT_EQ(MsrName(0x812), "X2APIC_ISR2");
  // Numbered blocks: the macro's stem and the index.
  EXPECT_EQ(MsrName(0xc1), "ARCH_PERFMON_PERFCTR0");
  EXPECT_EQ(MsrName(0x189), "ARCH_PERFMON_EVENTSEL3");
  EXPECT_EQ(MsrName(0x30a), "CORE_PERF_FIXED_CTR1");
  EXPECT_EQ(MsrName(0x205), "MTRRphysMask2");
  EXPECT_EQ(MsrName(0x26b), "MTRRfix4K_D8000");
  EXPECT_EQ(MsrName(0x4c2), "IA32_PMC1");
  EXPECT_EQ(MsrName(0x40d), "IA32_MC3_STATUS");
  EXPECT_EQ(MsrName(0x47f), "IA32_MC31_MISC");
  EXPECT_EQ(MsrName(0xc0010203), "F15H_PERF_CTR1");
  EXPECT_EQ(MsrName(0xc0010002), "K7_EVNTSEL2");
  EXPECT_EQ(MsrName(0x40000092), "HV_SINT2");
  EXPECT_EQ(MsrName(0x12345), "");
}

TEST(MsrNamesTest, NamesPortsExitsCrsHypercalls) {
  EXPECT_EQ(IoPortName(0x3fd), "COM1 LSR");
  EXPECT_EQ(IoPortName(0x2f8), "COM2 RBR/THR");
  EXPECT_EQ(IoPortName(0xcfe), "PCI CONFIG_DATA");
  EXPECT_EQ(IoPortName(0xcf8), "PCI CONFIG_ADDRESS");
  EXPECT_EQ(IoPortName(0x70), "CMOS/RTC index");
  EXPECT_EQ(IoPortName(0x80), "POST code");
  EXPECT_EQ(IoPortName(0x608), "ACPI PM timer");
  EXPECT_EQ(IoPortName(0x10), "");
  EXPECT_EQ(KvmExitName(2), "KVM_EXIT_IO");
  EXPECT_EQ(KvmExitName(5), "KVM_EXIT_HLT");
  EXPECT_EQ(KvmExitName(6), "KVM_EXIT_MMIO");
  EXPECT_EQ(KvmExitName(39), "KVM_EXIT_MEMORY_FAULT");
  EXPECT_EQ(KvmExitName(200), "KVM_EXIT_UNKNOWN(0xc8)");
  EXPECT_EQ(CrName(4), "cr4");
  EXPECT_EQ(HypercallName(5), "KVM_HC_KICK_CPU");
  EXPECT_EQ(HypercallName(1), "KVM_HC_VAPIC_POLL_IRQ");
  EXPECT_EQ(HypercallName(99), "");
  EXPECT_EQ(MmioTypeName(2), "write");
}

}  // namespace
}  // namespace exitscope
