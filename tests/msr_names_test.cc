#include "decode/msr_names.h"

#include <gtest/gtest.h>

namespace exitscope {
namespace {

TEST(MsrNamesTest, NamesCommonMsrs) {
  EXPECT_EQ(MsrName(0x6e0), "TSC_DEADLINE");
  EXPECT_EQ(MsrName(0x830), "X2APIC_ICR");
  EXPECT_EQ(MsrName(0x80b), "X2APIC_EOI");
  EXPECT_EQ(MsrName(0x838), "X2APIC_TIMER_ICR");
  EXPECT_EQ(MsrName(0x1b), "APIC_BASE");
  EXPECT_EQ(MsrName(0x8b), "UCODE_REV");
  EXPECT_EQ(MsrName(0xc0000080), "EFER");
  EXPECT_EQ(MsrName(0xc0000102), "KERNEL_GS_BASE");
  EXPECT_EQ(MsrName(0x4b564d01), "KVM_SYSTEM_TIME_NEW");
  EXPECT_EQ(MsrName(0x4b564d05), "KVM_POLL_CONTROL");
  EXPECT_EQ(MsrName(0x189), "PERFEVTSEL3");
  EXPECT_EQ(MsrName(0x30a), "FIXED_CTR1");
  EXPECT_EQ(MsrName(0x205), "MTRR_PHYS_MASK2");
  EXPECT_EQ(MsrName(0xc0010203), "AMD_PERF_CTR1");
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
