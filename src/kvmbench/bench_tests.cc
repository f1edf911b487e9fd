#include "kvmbench/bench_tests.h"

#include "kvmbench/guest_abi.h"

// x86-64 builds run guest_code.S, arm64 builds guest_code_arm64.S; others have no tests.
#if defined(__x86_64__)

// Symbols defined by guest_code.S.
#define KVMBENCH_GUEST_SYMBOLS(name) extern "C" const uint8_t kvmbench_test_##name[], kvmbench_rip_##name[];
KVMBENCH_GUEST_SYMBOLS(cpuid)
KVMBENCH_GUEST_SYMBOLS(vmcall)
KVMBENCH_GUEST_SYMBOLS(vmmcall)
KVMBENCH_GUEST_SYMBOLS(mov_to_dr7)
KVMBENCH_GUEST_SYMBOLS(dr_burst)
KVMBENCH_GUEST_SYMBOLS(dr_burst_guestdbg)
KVMBENCH_GUEST_SYMBOLS(mov_from_cr8)
KVMBENCH_GUEST_SYMBOLS(mov_to_cr8)
KVMBENCH_GUEST_SYMBOLS(rdmsr_tsc_deadline)
KVMBENCH_GUEST_SYMBOLS(wrmsr_tsc_deadline)
KVMBENCH_GUEST_SYMBOLS(rdmsr_to_user)
KVMBENCH_GUEST_SYMBOLS(wrmsr_to_user)
KVMBENCH_GUEST_SYMBOLS(inl_from_kernel)
KVMBENCH_GUEST_SYMBOLS(inl_from_user)
KVMBENCH_GUEST_SYMBOLS(outl_to_user)
KVMBENCH_GUEST_SYMBOLS(pio_ioeventfd)
KVMBENCH_GUEST_SYMBOLS(mmio_user)
KVMBENCH_GUEST_SYMBOLS(mmio_ioeventfd)
KVMBENCH_GUEST_SYMBOLS(hlt)
extern "C" const uint8_t kvmbench_guest_begin[], kvmbench_guest_end[], kvmbench_guest_main[];

namespace exitscope::kvmbench {
namespace {

#define SAME(name) kvmbench_test_##name, kvmbench_test_##name, kvmbench_rip_##name, kvmbench_rip_##name

constexpr BenchTest kTests[] = {
    {"cpuid", "CPUID leaf 0, always intercepted, handled in the kernel", "cpuid", SAME(cpuid), VmKind::kIrqchip, false,
     false},
    {"vmcall", "hypercall KVM_HC_VAPIC_POLL_IRQ (VMCALL on Intel, VMMCALL on AMD)", "hypercall", kvmbench_test_vmcall,
     kvmbench_test_vmmcall, kvmbench_rip_vmcall, kvmbench_rip_vmmcall, VmKind::kIrqchip, false, false},
    {"mov_to_dr7",
     "MOV to DR7; KVM stops intercepting DR accesses after the first one until the next "
     "exit, so few iterations exit",
     "dr7 write (first access after each exit)", SAME(mov_to_dr7), VmKind::kIrqchip, false, false},
    {"dr_burst",
     "CPUID, then a burst of 16 DR accesses (a context switch with hardware breakpoints: "
     "DR0-DR3, DR6, DR7); lazy DR switching lets only the first access of each burst exit",
     "cpuid + the burst's first DR access (read_dr7 on SVM, DR_ACCESS on VMX)", SAME(dr_burst), VmKind::kIrqchip, false,
     false},
    {"dr_burst_guestdbg",
     "dr_burst with KVM_SET_GUEST_DEBUG (ENABLE | USE_HW_BP, nothing armed), as "
     "an attached gdbstub leaves it: KVM keeps intercepting, so all 16 DR accesses of each burst exit",
     "cpuid + 16 DR exits per iteration (read/write_drN on SVM, DR_ACCESS on VMX)", SAME(dr_burst_guestdbg),
     VmKind::kIrqchip, false, false, /*guest_debug=*/true},
    {"mov_from_cr8", "MOV from CR8 (TPR); usually virtualized without an exit", "none expected", SAME(mov_from_cr8),
     VmKind::kIrqchip, false, false},
    {"mov_to_cr8", "MOV to CR8 (TPR); exits only while an interrupt is pending", "none expected", SAME(mov_to_cr8),
     VmKind::kIrqchip, false, false},
    {"rdmsr_tsc_deadline", "RDMSR IA32_TSC_DEADLINE, in-kernel LAPIC", "msr read", SAME(rdmsr_tsc_deadline),
     VmKind::kIrqchip, false, false},
    {"wrmsr_tsc_deadline", "WRMSR IA32_TSC_DEADLINE = 0, in-kernel LAPIC", "msr write", SAME(wrmsr_tsc_deadline),
     VmKind::kIrqchip, false, false},
    {"rdmsr_to_user", "RDMSR IA32_TSC_ADJUST denied by an MSR filter: answered by our VMM",
     "msr read, userspace KVM_EXIT_X86_RDMSR", SAME(rdmsr_to_user), VmKind::kIrqchip, true, false},
    {"wrmsr_to_user", "WRMSR IA32_TSC_ADJUST denied by an MSR filter: answered by our VMM",
     "msr write, userspace KVM_EXIT_X86_WRMSR", SAME(wrmsr_to_user), VmKind::kIrqchip, true, false},
    {"inl_from_kernel", "IN from port 0x40, the in-kernel PIT", "io, no userspace exit", SAME(inl_from_kernel),
     VmKind::kIrqchip, false, false},
    {"inl_from_user", "IN from port 0xf1, answered by our VMM", "io, userspace KVM_EXIT_IO", SAME(inl_from_user),
     VmKind::kIrqchip, false, false},
    {"outl_to_user", "OUT to port 0xf2, consumed by our VMM", "io, userspace KVM_EXIT_IO", SAME(outl_to_user),
     VmKind::kIrqchip, false, false},
    {"pio_ioeventfd", "OUT to port 0xf4, signalled through a KVM_IOEVENTFD", "io, no userspace exit",
     SAME(pio_ioeventfd), VmKind::kIrqchip, false, true},
    {"mmio_user", "32-bit store to unbacked GPA 0xd0000000, emulated, handed to our VMM",
     "npf, userspace KVM_EXIT_MMIO", SAME(mmio_user), VmKind::kIrqchip, false, false},
    {"mmio_ioeventfd", "32-bit store to GPA 0xd0001000, caught by a KVM_IOEVENTFD (MMIO bus)", "npf, no userspace exit",
     SAME(mmio_ioeventfd), VmKind::kIrqchip, false, true},
    {"hlt", "HLT with no in-kernel irqchip: each one is a KVM_EXIT_HLT round trip through our VMM",
     "hlt, userspace KVM_EXIT_HLT", SAME(hlt), VmKind::kPlain, false, false},
};
#undef SAME

}  // namespace

std::span<const BenchTest> BenchTests() { return kTests; }

const BenchTest* FindBenchTest(std::string_view name) {
  for (const auto& t : kTests) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

uint64_t GuestAddress(const uint8_t* symbol) {
  return KVMBENCH_CODE_GPA + static_cast<uint64_t>(symbol - kvmbench_guest_begin);
}

std::span<const uint8_t> GuestCode() {
  return {kvmbench_guest_begin, static_cast<size_t>(kvmbench_guest_end - kvmbench_guest_begin)};
}

uint64_t GuestMainAddress() { return GuestAddress(kvmbench_guest_main); }

}  // namespace exitscope::kvmbench
#elif defined(__aarch64__)
#include "kvmbench/guest_abi_arm64.h"

#define KVMBENCH_GUEST_SYMBOLS(name) extern "C" const uint8_t kvmbench_test_##name[], kvmbench_rip_##name[];
KVMBENCH_GUEST_SYMBOLS(hvc)
KVMBENCH_GUEST_SYMBOLS(sysreg_read)
KVMBENCH_GUEST_SYMBOLS(mmio_user)
KVMBENCH_GUEST_SYMBOLS(mmio_ioeventfd)
KVMBENCH_GUEST_SYMBOLS(wfi)
extern "C" const uint8_t kvmbench_guest_begin[], kvmbench_guest_end[], kvmbench_guest_main[];

namespace exitscope::kvmbench {
namespace {

#define SAME(name) kvmbench_test_##name, kvmbench_test_##name, kvmbench_rip_##name, kvmbench_rip_##name

// The arm64 guest (guest_code_arm64.S); intended exits as exitscope report names them (EC, esr.h).
constexpr BenchTest kTests[] = {
    {"hvc", "HVC #0 with x0 = PSCI_VERSION, answered by KVM's PSCI code", "HVC64", SAME(hvc), VmKind::kIrqchip, false,
     false},
    {"sysreg_read", "MRS ID_AA64MMFR0_EL1, an ID register read trapped by HCR_EL2.TID3", "SYS64 (read)",
     SAME(sysreg_read), VmKind::kIrqchip, false, false},
    {"mmio_user", "64-bit store to unbacked IPA 0x10001000, handed to our VMM", "DABT_LOW, userspace KVM_EXIT_MMIO",
     SAME(mmio_user), VmKind::kIrqchip, false, false},
    {"mmio_ioeventfd", "64-bit store to IPA 0x10002000, caught by a KVM_IOEVENTFD (MMIO bus)",
     "DABT_LOW, no userspace exit", SAME(mmio_ioeventfd), VmKind::kIrqchip, false, true},
    {"wfi",
     "WFI with the guest's virtual timer due 200 us later (in-kernel vGICv3), the wait "
     "included; a WFI whose timer already fired does not trap",
     "WFx", SAME(wfi), VmKind::kIrqchip, false, false},
};

}  // namespace

std::span<const BenchTest> BenchTests() { return kTests; }

const BenchTest* FindBenchTest(std::string_view name) {
  for (const auto& t : kTests) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

uint64_t GuestAddress(const uint8_t* symbol) {
  return KVMBENCH_A64_CODE_GPA + static_cast<uint64_t>(symbol - kvmbench_guest_begin);
}

std::span<const uint8_t> GuestCode() {
  return {kvmbench_guest_begin, static_cast<size_t>(kvmbench_guest_end - kvmbench_guest_begin)};
}

uint64_t GuestMainAddress() { return GuestAddress(kvmbench_guest_main); }

}  // namespace exitscope::kvmbench
#else
namespace exitscope::kvmbench {
std::span<const BenchTest> BenchTests() { return {}; }
const BenchTest* FindBenchTest(std::string_view) { return nullptr; }
}  // namespace exitscope::kvmbench
#endif
