#include "decode/msr_names.h"

#include <cstdio>

namespace exitscope {
namespace {

struct Named {
  uint32_t key;
  std::string_view name;
};

// The one MSR table (the report's MSR rows, advise's evidence). A name is the kernel's macro without
// its MSR_ prefix: arch/x86/include/asm/msr-index.h (MSR_IA32_TSC -> "IA32_TSC"), arch/x86/include/
// asm/perf_event.h for the architectural PMU, arch/x86/include/uapi/asm/kvm_para.h for KVM's own.
constexpr Named kMsrs[] = {
    {0x00000010, "IA32_TSC"},
    {0x0000001b, "IA32_APICBASE"},
    {0x0000003a, "IA32_FEAT_CTL"},  // the SDM's IA32_FEATURE_CONTROL
    {0x0000003b, "IA32_TSC_ADJUST"},
    {0x00000048, "IA32_SPEC_CTRL"},
    {0x00000049, "IA32_PRED_CMD"},
    {0x00000079, "IA32_UCODE_WRITE"},
    {0x0000008b, "IA32_UCODE_REV"},  // the SDM's IA32_BIOS_SIGN_ID
    {0x000000e7, "IA32_MPERF"},
    {0x000000e8, "IA32_APERF"},
    {0x000000fe, "MTRRcap"},
    {0x0000010a, "IA32_ARCH_CAPABILITIES"},
    {0x0000010b, "IA32_FLUSH_CMD"},
    {0x00000122, "IA32_TSX_CTRL"},
    {0x00000174, "IA32_SYSENTER_CS"},
    {0x00000175, "IA32_SYSENTER_ESP"},
    {0x00000176, "IA32_SYSENTER_EIP"},
    {0x00000179, "IA32_MCG_CAP"},
    {0x0000017a, "IA32_MCG_STATUS"},
    {0x00000198, "IA32_PERF_STATUS"},
    {0x00000199, "IA32_PERF_CTL"},
    {0x000001a0, "IA32_MISC_ENABLE"},
    {0x000001d9, "IA32_DEBUGCTLMSR"},
    {0x00000250, "MTRRfix64K_00000"},
    {0x00000258, "MTRRfix16K_80000"},
    {0x00000259, "MTRRfix16K_A0000"},
    {0x00000268, "MTRRfix4K_C0000"},
    {0x00000269, "MTRRfix4K_C8000"},
    {0x0000026a, "MTRRfix4K_D0000"},
    {0x0000026b, "MTRRfix4K_D8000"},
    {0x0000026c, "MTRRfix4K_E0000"},
    {0x0000026d, "MTRRfix4K_E8000"},
    {0x0000026e, "MTRRfix4K_F0000"},
    {0x0000026f, "MTRRfix4K_F8000"},
    {0x00000277, "IA32_CR_PAT"},
    {0x000002ff, "MTRRdefType"},
    {0x00000345, "IA32_PERF_CAPABILITIES"},
    {0x0000038d, "CORE_PERF_FIXED_CTR_CTRL"},
    {0x0000038e, "CORE_PERF_GLOBAL_STATUS"},
    {0x0000038f, "CORE_PERF_GLOBAL_CTRL"},
    {0x00000390, "CORE_PERF_GLOBAL_OVF_CTRL"},
    {0x000003f1, "IA32_PEBS_ENABLE"},
    {0x00000480, "IA32_VMX_BASIC"},
    {0x00000481, "IA32_VMX_PINBASED_CTLS"},
    {0x00000482, "IA32_VMX_PROCBASED_CTLS"},
    {0x00000483, "IA32_VMX_EXIT_CTLS"},
    {0x00000484, "IA32_VMX_ENTRY_CTLS"},
    {0x00000485, "IA32_VMX_MISC"},
    {0x00000486, "IA32_VMX_CR0_FIXED0"},
    {0x00000487, "IA32_VMX_CR0_FIXED1"},
    {0x00000488, "IA32_VMX_CR4_FIXED0"},
    {0x00000489, "IA32_VMX_CR4_FIXED1"},
    {0x0000048a, "IA32_VMX_VMCS_ENUM"},
    {0x0000048b, "IA32_VMX_PROCBASED_CTLS2"},
    {0x0000048c, "IA32_VMX_EPT_VPID_CAP"},
    {0x0000048d, "IA32_VMX_TRUE_PINBASED_CTLS"},
    {0x0000048e, "IA32_VMX_TRUE_PROCBASED_CTLS"},
    {0x0000048f, "IA32_VMX_TRUE_EXIT_CTLS"},
    {0x00000490, "IA32_VMX_TRUE_ENTRY_CTLS"},
    {0x00000491, "IA32_VMX_VMFUNC"},
    {0x00000492, "IA32_VMX_PROCBASED_CTLS3"},
    {0x000006e0, "IA32_TSC_DEADLINE"},
    {0x00000da0, "IA32_XSS"},
    // KVM paravirtual MSRs (arch/x86/include/uapi/asm/kvm_para.h).
    {0x00000011, "KVM_WALL_CLOCK"},
    {0x00000012, "KVM_SYSTEM_TIME"},
    {0x4b564d00, "KVM_WALL_CLOCK_NEW"},
    {0x4b564d01, "KVM_SYSTEM_TIME_NEW"},
    {0x4b564d02, "KVM_ASYNC_PF_EN"},
    {0x4b564d03, "KVM_STEAL_TIME"},
    {0x4b564d04, "KVM_PV_EOI_EN"},
    {0x4b564d05, "KVM_POLL_CONTROL"},
    {0x4b564d06, "KVM_ASYNC_PF_INT"},
    {0x4b564d07, "KVM_ASYNC_PF_ACK"},
    {0x4b564d08, "KVM_MIGRATION_CONTROL"},
    // Hyper-V synthetic MSRs (arch/x86/include/asm/hyperv-tlfs.h HV_X64_MSR_*, "X64_MSR_" left out).
    {0x40000000, "HV_GUEST_OS_ID"},
    {0x40000001, "HV_HYPERCALL"},
    {0x40000002, "HV_VP_INDEX"},
    {0x40000003, "HV_RESET"},
    {0x40000010, "HV_VP_RUNTIME"},
    {0x40000020, "HV_TIME_REF_COUNT"},
    {0x40000021, "HV_REFERENCE_TSC"},
    {0x40000022, "HV_TSC_FREQUENCY"},
    {0x40000023, "HV_APIC_FREQUENCY"},
    {0x40000070, "HV_EOI"},
    {0x40000071, "HV_ICR"},
    {0x40000072, "HV_TPR"},
    {0x40000073, "HV_VP_ASSIST_PAGE"},
    {0x40000080, "HV_SCONTROL"},
    {0x40000081, "HV_SVERSION"},
    {0x40000082, "HV_SIEFP"},
    {0x40000083, "HV_SIMP"},
    {0x40000084, "HV_EOM"},
    // x86-64 and AMD (msr-index.h).
    {0xc0000080, "EFER"},
    {0xc0000081, "STAR"},
    {0xc0000082, "LSTAR"},
    {0xc0000083, "CSTAR"},
    {0xc0000084, "SYSCALL_MASK"},
    {0xc0000100, "FS_BASE"},
    {0xc0000101, "GS_BASE"},
    {0xc0000102, "KERNEL_GS_BASE"},
    {0xc0000103, "TSC_AUX"},
    {0xc0000300, "AMD64_PERF_CNTR_GLOBAL_STATUS"},
    {0xc0000301, "AMD64_PERF_CNTR_GLOBAL_CTL"},
    {0xc0000302, "AMD64_PERF_CNTR_GLOBAL_STATUS_CLR"},
    {0xc0010010, "AMD64_SYSCFG"},
    {0xc0010015, "K7_HWCR"},
    {0xc0010114, "VM_CR"},
    {0xc0010117, "VM_HSAVE_PA"},
    {0xc0010131, "AMD64_SEV"},
    {0xc0011029, "AMD64_DE_CFG"},
};

// x2APIC registers: MSR 0x800 + (xAPIC MMIO offset >> 4) (Intel SDM vol. 3 "x2APIC Register
// Address Space"), named as arch/x86/include/asm/apicdef.h names the offsets (APIC_TMICT 0x380 ->
// X2APIC_TMICT).
constexpr uint32_t kX2ApicBase = 0x800;
constexpr Named kX2ApicRegs[] = {
    {0x02, "ID"},     {0x03, "LVR"},     {0x08, "TASKPRI"}, {0x0a, "PROCPRI"}, {0x0b, "EOI"},
    {0x0d, "LDR"},    {0x0f, "SPIV"},    {0x28, "ESR"},     {0x2f, "LVTCMCI"}, {0x30, "ICR"},
    {0x32, "LVTT"},   {0x33, "LVTTHMR"}, {0x34, "LVTPC"},   {0x35, "LVT0"},    {0x36, "LVT1"},
    {0x37, "LVTERR"}, {0x38, "TMICT"},   {0x39, "TMCCT"},   {0x3e, "TDCR"},    {0x3f, "SELF_IPI"},
};

// Numbered MSR ranges: first index, count, stride, name prefix (the kernel macro's stem).
struct Range {
  uint32_t first, count, stride;
  std::string_view prefix;
};
constexpr Range kMsrRanges[] = {
    {0x000000c1, 8, 1, "ARCH_PERFMON_PERFCTR"},   // perf_event.h MSR_ARCH_PERFMON_PERFCTR0
    {0x00000186, 8, 1, "ARCH_PERFMON_EVENTSEL"},  // perf_event.h MSR_ARCH_PERFMON_EVENTSEL0
    {0x00000200, 10, 2, "MTRRphysBase"},          // MTRRphysBase_MSR(reg)
    {0x00000201, 10, 2, "MTRRphysMask"},          // MTRRphysMask_MSR(reg)
    {0x00000309, 4, 1, "CORE_PERF_FIXED_CTR"},
    {0x000004c1, 8, 1, "IA32_PMC"},  // full-width counters
    {0x40000090, 16, 1, "HV_SINT"},
    {0x400000b0, 4, 2, "HV_STIMER_CONFIG"},
    {0x400000b1, 4, 2, "HV_STIMER_COUNT"},
    {0xc0010000, 4, 1, "K7_EVNTSEL"},
    {0xc0010004, 4, 1, "K7_PERFCTR"},
    {0xc0010200, 6, 2, "F15H_PERF_CTL"},  // core PMU, interleaved CTL/CTR
    {0xc0010201, 6, 2, "F15H_PERF_CTR"},
};

// Machine-check banks: MSR_IA32_MCx_CTL(x) = MSR_IA32_MC0_CTL (0x400) + 4 * x, then STATUS, ADDR, MISC.
constexpr uint32_t kMcBankBase = 0x400;
constexpr uint32_t kMcBanks = 32;
constexpr std::string_view kMcBankRegs[] = {"CTL", "STATUS", "ADDR", "MISC"};

template <size_t N>
std::string_view Lookup(const Named (&table)[N], uint32_t key) {
  for (const auto& n : table) {
    if (n.key == key) return n.name;
  }
  return {};
}

// i/o ports of the PC platform and QEMU's machines (hw/i386/pc.c, hw/nvram/fw_cfg.c).
constexpr Named kPorts[] = {
    {0x0020, "PIC1 command"},
    {0x0021, "PIC1 data"},
    {0x00a0, "PIC2 command"},
    {0x00a1, "PIC2 data"},
    {0x04d0, "PIC1 ELCR"},
    {0x04d1, "PIC2 ELCR"},
    {0x0040, "PIT ch0"},
    {0x0041, "PIT ch1"},
    {0x0042, "PIT ch2"},
    {0x0043, "PIT mode"},
    {0x0060, "i8042 data (PS/2)"},
    {0x0064, "i8042 status/cmd (PS/2)"},
    {0x0061, "port B (speaker/NMI)"},
    {0x0070, "CMOS/RTC index"},
    {0x0071, "CMOS/RTC data"},
    {0x0080, "POST code"},
    {0x0092, "fast A20"},
    {0x00b2, "APM/SMI command"},
    {0x00b3, "APM status"},
    {0x00f4, "QEMU isa-debug-exit (iobase=0xf4)"},
    {0x0402, "QEMU debugcon"},
    {0x0501, "QEMU isa-debug-exit (default)"},
    {0x0510, "QEMU fw_cfg selector"},
    {0x0511, "QEMU fw_cfg data"},
    {0x0514, "QEMU fw_cfg DMA"},
    {0x0600, "ACPI PM1 event"},
    {0x0604, "ACPI PM1 control"},
    {0x0608, "ACPI PM timer"},
    {0x0cf8, "PCI CONFIG_ADDRESS"},
    {0x0cf9, "PCI reset control"},
    {0x03f6, "ATA primary control"},
    {0x0376, "ATA secondary control"},
    {0xae00, "QEMU PCI hotplug"},
    {0xaf00, "QEMU CPU hotplug"},
};

struct PortRange {
  uint32_t first, count;
  std::string_view name;
};
constexpr PortRange kPortRanges[] = {
    {0x0cfc, 4, "PCI CONFIG_DATA"}, {0x01f0, 8, "ATA primary"},   {0x0170, 8, "ATA secondary"}, {0x03c0, 32, "VGA"},
    {0x0601, 3, "ACPI PM1 event"},  {0x0609, 3, "ACPI PM timer"},
};

// 16550 UART register offsets (include/uapi/linux/serial_reg.h).
constexpr std::string_view kUartRegs[] = {"RBR/THR", "IER", "IIR/FCR", "LCR", "MCR", "LSR", "MSR", "SCR"};
constexpr Named kComBases[] = {{0x3f8, "COM1"}, {0x2f8, "COM2"}, {0x3e8, "COM3"}, {0x2e8, "COM4"}};

// include/uapi/linux/kvm.h KVM_EXIT_* (0..40, Linux 6.x).
constexpr std::string_view kKvmExits[] = {
    "KVM_EXIT_UNKNOWN",
    "KVM_EXIT_EXCEPTION",
    "KVM_EXIT_IO",
    "KVM_EXIT_HYPERCALL",
    "KVM_EXIT_DEBUG",
    "KVM_EXIT_HLT",
    "KVM_EXIT_MMIO",
    "KVM_EXIT_IRQ_WINDOW_OPEN",
    "KVM_EXIT_SHUTDOWN",
    "KVM_EXIT_FAIL_ENTRY",
    "KVM_EXIT_INTR",
    "KVM_EXIT_SET_TPR",
    "KVM_EXIT_TPR_ACCESS",
    "KVM_EXIT_S390_SIEIC",
    "KVM_EXIT_S390_RESET",
    "KVM_EXIT_DCR",
    "KVM_EXIT_NMI",
    "KVM_EXIT_INTERNAL_ERROR",
    "KVM_EXIT_OSI",
    "KVM_EXIT_PAPR_HCALL",
    "KVM_EXIT_S390_UCONTROL",
    "KVM_EXIT_WATCHDOG",
    "KVM_EXIT_S390_TSCH",
    "KVM_EXIT_EPR",
    "KVM_EXIT_SYSTEM_EVENT",
    "KVM_EXIT_S390_STSI",
    "KVM_EXIT_IOAPIC_EOI",
    "KVM_EXIT_HYPERV",
    "KVM_EXIT_ARM_NISV",
    "KVM_EXIT_X86_RDMSR",
    "KVM_EXIT_X86_WRMSR",
    "KVM_EXIT_DIRTY_RING_FULL",
    "KVM_EXIT_AP_RESET_HOLD",
    "KVM_EXIT_X86_BUS_LOCK",
    "KVM_EXIT_XEN",
    "KVM_EXIT_RISCV_SBI",
    "KVM_EXIT_RISCV_CSR",
    "KVM_EXIT_NOTIFY",
    "KVM_EXIT_LOONGARCH_IOCSR",
    "KVM_EXIT_MEMORY_FAULT",
    "KVM_EXIT_TDX",
};

// include/uapi/linux/kvm_para.h KVM_HC_*.
constexpr std::string_view kHypercalls[] = {
    "",
    "KVM_HC_VAPIC_POLL_IRQ",
    "KVM_HC_MMU_OP",
    "KVM_HC_FEATURES",
    "KVM_HC_PPC_MAP_MAGIC_PAGE",
    "KVM_HC_KICK_CPU",
    "KVM_HC_MIPS_GET_CLOCK_FREQ",
    "KVM_HC_MIPS_EXIT_VM",
    "KVM_HC_MIPS_CONSOLE_OUTPUT",
    "KVM_HC_CLOCK_PAIRING",
    "KVM_HC_SEND_IPI",
    "KVM_HC_SCHED_YIELD",
    "KVM_HC_MAP_GPA_RANGE",
};

}  // namespace

std::string MsrName(uint32_t index) {
  if (auto n = Lookup(kMsrs, index); !n.empty()) return std::string(n);
  if (index >= kX2ApicBase && index < kX2ApicBase + 0x100) {
    uint32_t reg = index - kX2ApicBase;
    if (auto n = Lookup(kX2ApicRegs, reg); !n.empty()) return "X2APIC_" + std::string(n);
    if (reg >= 0x10 && reg < 0x18) return "X2APIC_ISR" + std::to_string(reg - 0x10);
    if (reg >= 0x18 && reg < 0x20) return "X2APIC_TMR" + std::to_string(reg - 0x18);
    if (reg >= 0x20 && reg < 0x28) return "X2APIC_IRR" + std::to_string(reg - 0x20);
    return "X2APIC_" + std::to_string(reg);
  }
  if (index >= kMcBankBase && index < kMcBankBase + kMcBanks * 4) {
    uint32_t bank = (index - kMcBankBase) / 4;
    return "IA32_MC" + std::to_string(bank) + "_" + std::string(kMcBankRegs[(index - kMcBankBase) % 4]);
  }
  for (const auto& r : kMsrRanges) {
    if (index >= r.first && index < r.first + r.count * r.stride && (index - r.first) % r.stride == 0) {
      return std::string(r.prefix) + std::to_string((index - r.first) / r.stride);
    }
  }
  return {};
}

std::string IoPortName(uint32_t port) {
  for (const auto& com : kComBases) {
    if (port >= com.key && port < com.key + 8) {
      return std::string(com.name) + " " + std::string(kUartRegs[port - com.key]);
    }
  }
  if (auto n = Lookup(kPorts, port); !n.empty()) return std::string(n);
  for (const auto& r : kPortRanges) {
    if (port >= r.first && port < r.first + r.count) return std::string(r.name);
  }
  return {};
}

std::string KvmExitName(uint32_t reason) {
  if (reason < std::size(kKvmExits)) return std::string(kKvmExits[reason]);
  char buf[40];
  std::snprintf(buf, sizeof buf, "KVM_EXIT_UNKNOWN(0x%x)", reason);
  return buf;
}

std::string CrName(uint32_t cr) { return "cr" + std::to_string(cr); }

std::string_view HypercallName(uint64_t nr) {
  return nr < std::size(kHypercalls) ? kHypercalls[nr] : std::string_view();
}

std::string_view MmioTypeName(uint32_t type) {
  // KVM_TRACE_MMIO_READ_UNSATISFIED 0, KVM_TRACE_MMIO_READ 1, KVM_TRACE_MMIO_WRITE 2.
  switch (type) {
    case 0: return "unsatisfied-read";
    case 1: return "read";
    case 2: return "write";
  }
  return "?";
}

}  // namespace exitscope
