// The contract between the arm64 VMM (bench_vm_arm64.cc) and its built-in guest (guest_code_arm64.S):
// guest-physical layout, MMIO addresses, the vGICv3 frames, the registers the VMM sets at reset.
// In: nothing. Out: #defines, because the assembler reads this file too. The mailbox offsets
// (KVMBENCH_MB_*) are guest_abi.h's. Assumption: EL1, MMU off (IPA == VA), one vCPU.
#ifndef EXITSCOPE_KVMBENCH_GUEST_ABI_ARM64_H_
#define EXITSCOPE_KVMBENCH_GUEST_ABI_ARM64_H_

// Guest RAM: one 2 MiB memslot, above the vGIC frames and the MMIO window.
#define KVMBENCH_A64_RAM_GPA 0x40000000
#define KVMBENCH_A64_RAM_BYTES 0x200000
#define KVMBENCH_A64_MAILBOX_GPA 0x40008000
#define KVMBENCH_A64_CODE_GPA 0x40010000  // VBAR_EL1 = here: 2 KiB aligned

// Outside every memslot: accesses are stage-2 data aborts (EC DABT_LOW) that KVM hands to the VMM
// as KVM_EXIT_MMIO, or to an ioeventfd. Offsets from the base, which the guest keeps in x20.
#define KVMBENCH_A64_MMIO_GPA 0x10000000
#define KVMBENCH_A64_MMIO_SYNC 0x0          // guest -> VMM: "results written, give me the next test"
#define KVMBENCH_A64_MMIO_USER 0x1000       // handled by our VMM
#define KVMBENCH_A64_MMIO_IOEVENTFD 0x2000  // caught by a KVM_IOEVENTFD (never reaches userspace)
#define KVMBENCH_A64_MMIO_PANIC 0x3000      // an unexpected guest exception: ESR here, ELR at +8

// The in-kernel vGICv3 (needed so that the guest timer's PPI can end a WFI on Linux 6.1).
#define KVMBENCH_A64_GICD_GPA 0x08000000  // distributor, 64 KiB
#define KVMBENCH_A64_GICR_GPA 0x080A0000  // redistributor of vCPU 0: RD + SGI frames, 128 KiB

// PSCI_0_2_FN_PSCI_VERSION (include/uapi/linux/psci.h): KVM answers it in the kernel.
#define KVMBENCH_A64_PSCI_VERSION_HI 0x8400  // 0x84000000 >> 16
// The WFI test arms the guest's virtual timer this far ahead: CNTFRQ / KVMBENCH_A64_WFI_DIV (200 us:
// a WFI whose timer has already fired does not trap, and under emulation 50 us had passed before
// the WFI every time). ns_per_iter of wfi includes this wait.
#define KVMBENCH_A64_WFI_DIV 5000

#endif  // EXITSCOPE_KVMBENCH_GUEST_ABI_ARM64_H_
