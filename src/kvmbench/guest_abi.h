// The contract between the VMM (bench_vm.cc) and the built-in guest (guest_code.S): guest-physical
// layout, I/O ports, MMIO addresses, the MSR we filter to userspace and the mailbox offsets.
// In: nothing. Out: #defines, because the assembler reads this file too.
// Assumption: the guest is identity-mapped (GVA == GPA) and runs in 64-bit long mode at CPL 0.
#ifndef EXITSCOPE_KVMBENCH_GUEST_ABI_H_
#define EXITSCOPE_KVMBENCH_GUEST_ABI_H_

// Guest RAM: one 2 MiB memslot at GPA 0.
#define KVMBENCH_RAM_BYTES 0x200000
#define KVMBENCH_PML4_GPA 0x1000
#define KVMBENCH_PDPT_GPA 0x2000
#define KVMBENCH_PD_GPA 0x3000  // four page directories (0x3000-0x6fff): 4 GiB of 2 MiB pages
#define KVMBENCH_MAILBOX_GPA 0x8000
#define KVMBENCH_STACK_TOP_GPA 0x10000
#define KVMBENCH_CODE_GPA 0x10000

// Mailbox (u64 fields): the VMM writes entry and iterations, the guest writes cycles.
#define KVMBENCH_MB_ENTRY 0
#define KVMBENCH_MB_ITERATIONS 8
#define KVMBENCH_MB_CYCLES 16

// Ports 0xf0-0xff are the legacy FPU error ports: no in-kernel KVM device claims them.
#define KVMBENCH_PORT_SYNC 0xf0       // guest -> VMM: "results written, give me the next test"
#define KVMBENCH_PORT_USER_IN 0xf1    // inl handled by our VMM
#define KVMBENCH_PORT_USER_OUT 0xf2   // outl handled by our VMM
#define KVMBENCH_PORT_IOEVENTFD 0xf4  // outl caught by a KVM_IOEVENTFD (never reaches userspace)
// The in-kernel i8254 PIT (KVM_CREATE_PIT2) owns ports 0x40-0x43 (arch/x86/kvm/i8254.c).
#define KVMBENCH_PORT_PIT_COUNTER0 0x40

// Outside every memslot, so accesses fault (NPF/EPT violation) and are emulated as MMIO.
#define KVMBENCH_MMIO_USER_GPA 0xd0000000
#define KVMBENCH_MMIO_IOEVENTFD_GPA 0xd0001000

// IA32_TSC_DEADLINE (Intel SDM vol. 4; arch/x86/include/asm/msr-index.h MSR_IA32_TSC_DEADLINE).
#define KVMBENCH_MSR_TSC_DEADLINE 0x6e0
// IA32_TSC_ADJUST: harmless to read and write; the VMM denies it in a KVM_X86_SET_MSR_FILTER so that
// accesses exit to userspace (KVM_EXIT_X86_RDMSR/WRMSR) instead of being handled by the kernel.
#define KVMBENCH_MSR_USER 0x3b

// KVM_HC_VAPIC_POLL_IRQ (include/uapi/linux/kvm_para.h): a hypercall KVM answers with 0 and no effect.
#define KVMBENCH_HC_VAPIC_POLL_IRQ 1

#endif  // EXITSCOPE_KVMBENCH_GUEST_ABI_H_
