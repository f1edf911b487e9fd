// The built-in arm64 benchmark guest: EL1, MMU off, interrupts masked (PSTATE.I, as KVM resets it).
// Assembled into arm64 builds as read-only data; the VMM copies kvmbench_guest_begin..end to
// KVMBENCH_A64_CODE_GPA and starts the vCPU at kvmbench_guest_main with x19 = mailbox, x20 = MMIO
// base, x21 = GICD, x22 = GICR. Protocol as on x86 (guest_code.S): the guest writes to the sync
// address, the VMM fills the mailbox, the guest calls the test entry with the iteration count in x5
// and stores the virtual counter ticks it took, then syncs again. Each test exports
// kvmbench_test_<name> and kvmbench_rip_<name> (its exiting instruction). Tests may clobber x0-x18.
#include "kvmbench/guest_abi.h"
#include "kvmbench/guest_abi_arm64.h"

        .section .rodata.kvmbench_guest, "a"
        .balign 4096
        .globl kvmbench_guest_begin
kvmbench_guest_begin:
// Vectors (VBAR_EL1): any exception reports ESR and ELR to the VMM, which fails the bench.
        .rept 16
        .balign 0x80
        mrs     x10, esr_el1
        mrs     x11, elr_el1
        str     x11, [x20, #(KVMBENCH_A64_MMIO_PANIC + 8)]
        str     x10, [x20, #KVMBENCH_A64_MMIO_PANIC]
        b       .
        .endr

        .balign 0x800
        .globl kvmbench_guest_main
kvmbench_guest_main:
        adr     x9, kvmbench_guest_begin
        msr     vbar_el1, x9
        isb
// vGIC: distributor on (ARE, Grp0, Grp1); PPI 27 (virtual timer) group 1, priority 0x80, enabled;
// CPU interface priority mask 0xf0, group 1 on. The GICv3 register offsets: GICD_CTLR 0x0; in the
// redistributor's SGI frame (+64 KiB) GICR_IGROUPR0 0x80, GICR_ISENABLER0 0x100, GICR_IPRIORITYR 0x400.
        mov     w9, #0x13
        str     w9, [x21]
        add     x9, x22, #0x10000
        mov     w10, #(1 << 27)
        str     w10, [x9, #0x80]
        mov     w11, #0x80
        strb    w11, [x9, #(0x400 + 27)]
        str     w10, [x9, #0x100]
        mov     x9, #0xf0
        msr     icc_pmr_el1, x9
        mov     x9, #1
        msr     icc_igrpen1_el1, x9
        isb
        mrs     x9, cntfrq_el0
        mov     x10, #KVMBENCH_A64_WFI_DIV
        udiv    x23, x9, x10                      // x23: WFI timer distance in ticks
1:      str     xzr, [x20, #KVMBENCH_A64_MMIO_SYNC]
        ldr     x5, [x19, #KVMBENCH_MB_ITERATIONS]
        ldr     x9, [x19, #KVMBENCH_MB_ENTRY]
        isb
        mrs     x24, cntvct_el0
        blr     x9
        isb
        mrs     x25, cntvct_el0
        sub     x25, x25, x24
        str     x25, [x19, #KVMBENCH_MB_CYCLES]
        b       1b

.macro BENCH_END
        subs    x5, x5, #1
        b.ne    2b
        ret
.endm

        .globl kvmbench_test_hvc, kvmbench_rip_hvc
kvmbench_test_hvc:
2:      movz    x0, #KVMBENCH_A64_PSCI_VERSION_HI, lsl #16
kvmbench_rip_hvc:
        hvc     #0                                // SMCCC: may clobber x0-x3
        BENCH_END

        .globl kvmbench_test_sysreg_read, kvmbench_rip_sysreg_read
kvmbench_test_sysreg_read:
2:
kvmbench_rip_sysreg_read:
        mrs     x6, id_aa64mmfr0_el1              // an ID register: trapped by HCR_EL2.TID3
        BENCH_END

        .globl kvmbench_test_mmio_user, kvmbench_rip_mmio_user
kvmbench_test_mmio_user:
2:
kvmbench_rip_mmio_user:
        str     x5, [x20, #KVMBENCH_A64_MMIO_USER]
        BENCH_END

        .globl kvmbench_test_mmio_ioeventfd, kvmbench_rip_mmio_ioeventfd
kvmbench_test_mmio_ioeventfd:
2:
kvmbench_rip_mmio_ioeventfd:
        str     x5, [x20, #KVMBENCH_A64_MMIO_IOEVENTFD]
        BENCH_END

        .globl kvmbench_test_wfi, kvmbench_rip_wfi
kvmbench_test_wfi:
2:      mrs     x6, cntvct_el0
        add     x6, x6, x23
        msr     cntv_cval_el0, x6
        mov     x7, #1                            // enabled, not masked
        msr     cntv_ctl_el0, x7
        isb
kvmbench_rip_wfi:
        wfi                                       // trapped by HCR_EL2.TWI; the timer PPI wakes it
        msr     cntv_ctl_el0, xzr
        isb
        BENCH_END

        .globl kvmbench_guest_end
kvmbench_guest_end:
