// The built-in benchmark guest: 64-bit, identity-mapped, CPL 0, interrupts off. Assembled into the
// exitscope binary as read-only data; the VMM copies kvmbench_guest_begin..end to KVMBENCH_CODE_GPA.
// Protocol: the guest OUTs to KVMBENCH_PORT_SYNC, the VMM fills the mailbox, the guest calls the test
// entry with the iteration count and stores the TSC cycles it took, then OUTs again.
// Each test exports kvmbench_test_<name> (its entry) and kvmbench_rip_<name> (its exiting instruction),
// so the VMM can tell which guest RIP each test's exits must carry.
#include "kvmbench/guest_abi.h"

        .section .rodata.kvmbench_guest, "a"
        .code64
        .balign 16
        .globl kvmbench_guest_begin
kvmbench_guest_begin:
        .globl kvmbench_guest_main
kvmbench_guest_main:
        out     %al, $KVMBENCH_PORT_SYNC
        mov     KVMBENCH_MAILBOX_GPA + KVMBENCH_MB_ITERATIONS, %rdi
        mov     KVMBENCH_MAILBOX_GPA + KVMBENCH_MB_ENTRY, %rax
        call    *%rax
        mov     %rax, KVMBENCH_MAILBOX_GPA + KVMBENCH_MB_CYCLES
        jmp     kvmbench_guest_main

// r15 counts iterations down, r14 holds the start TSC; the body may clobber rax-rdx, rsi, rbx.
// LFENCE keeps RDTSC from executing before earlier instructions finish (Intel SDM RDTSC note).
.macro BENCH_BEGIN name
        .balign 16
        .globl kvmbench_test_\name
kvmbench_test_\name:
        mov     %rdi, %r15
        lfence
        rdtsc
        shl     $32, %rdx
        or      %rdx, %rax
        mov     %rax, %r14
1:
.endm

.macro BENCH_END
        dec     %r15
        jnz     1b
        lfence
        rdtsc
        shl     $32, %rdx
        or      %rdx, %rax
        sub     %r14, %rax
        ret
.endm

.macro EXIT_RIP name
        .globl kvmbench_rip_\name
kvmbench_rip_\name:
.endm

BENCH_BEGIN cpuid
        xor     %eax, %eax
        xor     %ecx, %ecx
EXIT_RIP cpuid
        cpuid
BENCH_END

BENCH_BEGIN vmcall
        mov     $KVMBENCH_HC_VAPIC_POLL_IRQ, %eax
        xor     %ebx, %ebx
        xor     %ecx, %ecx
        xor     %edx, %edx
        xor     %esi, %esi
EXIT_RIP vmcall
        vmcall
BENCH_END

BENCH_BEGIN vmmcall
        mov     $KVMBENCH_HC_VAPIC_POLL_IRQ, %eax
        xor     %ebx, %ebx
        xor     %ecx, %ecx
        xor     %edx, %edx
        xor     %esi, %esi
EXIT_RIP vmmcall
        vmmcall
BENCH_END

BENCH_BEGIN mov_to_dr7
        mov     $0x400, %rax            // DR7's reset value: no breakpoints armed
EXIT_RIP mov_to_dr7
        mov     %rax, %dr7
BENCH_END

BENCH_BEGIN mov_from_cr8
EXIT_RIP mov_from_cr8
        mov     %cr8, %rax
BENCH_END

BENCH_BEGIN mov_to_cr8
        xor     %eax, %eax
EXIT_RIP mov_to_cr8
        mov     %rax, %cr8
BENCH_END

BENCH_BEGIN rdmsr_tsc_deadline
        mov     $KVMBENCH_MSR_TSC_DEADLINE, %ecx
EXIT_RIP rdmsr_tsc_deadline
        rdmsr
BENCH_END

BENCH_BEGIN wrmsr_tsc_deadline
        mov     $KVMBENCH_MSR_TSC_DEADLINE, %ecx
        xor     %eax, %eax              // 0 disarms the timer
        xor     %edx, %edx
EXIT_RIP wrmsr_tsc_deadline
        wrmsr
BENCH_END

BENCH_BEGIN rdmsr_to_user
        mov     $KVMBENCH_MSR_USER, %ecx
EXIT_RIP rdmsr_to_user
        rdmsr
BENCH_END

BENCH_BEGIN wrmsr_to_user
        mov     $KVMBENCH_MSR_USER, %ecx
        xor     %eax, %eax
        xor     %edx, %edx
EXIT_RIP wrmsr_to_user
        wrmsr
BENCH_END

BENCH_BEGIN inl_from_kernel
        mov     $KVMBENCH_PORT_PIT_COUNTER0, %edx
EXIT_RIP inl_from_kernel
        in      %dx, %eax
BENCH_END

BENCH_BEGIN inl_from_user
        mov     $KVMBENCH_PORT_USER_IN, %edx
EXIT_RIP inl_from_user
        in      %dx, %eax
BENCH_END

BENCH_BEGIN outl_to_user
        mov     $KVMBENCH_PORT_USER_OUT, %edx
        xor     %eax, %eax
EXIT_RIP outl_to_user
        out     %eax, %dx
BENCH_END

BENCH_BEGIN pio_ioeventfd
        mov     $KVMBENCH_PORT_IOEVENTFD, %edx
        xor     %eax, %eax
EXIT_RIP pio_ioeventfd
        out     %eax, %dx
BENCH_END

BENCH_BEGIN mmio_user
        mov     $KVMBENCH_MMIO_USER_GPA, %ebx
        xor     %eax, %eax
EXIT_RIP mmio_user
        movl    %eax, (%rbx)
BENCH_END

BENCH_BEGIN mmio_ioeventfd
        mov     $KVMBENCH_MMIO_IOEVENTFD_GPA, %ebx
        xor     %eax, %eax
EXIT_RIP mmio_ioeventfd
        movl    %eax, (%rbx)
BENCH_END

BENCH_BEGIN hlt
EXIT_RIP hlt
        hlt
BENCH_END

        .globl kvmbench_guest_end
kvmbench_guest_end:
        .section .note.GNU-stack, "", @progbits
