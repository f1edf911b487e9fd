/*
 * kvmexits-arm64.c - a tiny aarch64 KVM VMM whose guest makes one exit of each kind per iteration, for
 * the arm64 KVM host harness (tools/kvmhost-arm64). Built on the host by aarch64-linux-gnu-gcc -static.
 *
 *   kvmexits-arm64 [ITERATIONS=100] [WFI_US=200] [GUARD_S=60]
 *
 * One VM, one vCPU (PSCI 0.2), 64 KiB of RAM at IPA 0x10000 holding the guest code below, and an
 * in-kernel vGICv3 (without one, Debian 6.1 never ends a WFI on the guest's timer: the harness's
 * header comment says why). Per iteration the guest (EL1, MMU off, IRQs masked) does, in order:
 *   hvc #0, x0 = PSCI_VERSION        EC 0x16 HVC64, answered by KVM's PSCI code
 *   mrs ID_AA64MMFR0_EL1             EC 0x18 SYS64, an ID register read trapped by HCR_EL2.TID3
 *   str to MMIO_USER                 EC 0x24 DABT_LOW, no memslot: KVM_EXIT_MMIO write to this VMM
 *   str to MMIO_IOEVENTFD            EC 0x24 DABT_LOW, caught by a KVM_IOEVENTFD in the kernel
 *   wfi, virtual timer due WFI_US on EC 0x01 WFx (HCR_EL2.TWI), woken by the timer PPI 27 in the vGIC
 *                                    (TCG does not trap a WFI whose timer already fired: fewer)
 *   ldr from MMIO_USER + 8           EC 0x24 DABT_LOW, KVM_EXIT_MMIO read: this VMM answers 1 to stop
 * then PSCI SYSTEM_OFF (one more HVC64) ends the run with KVM_EXIT_SYSTEM_EVENT.
 * Setup before the loop: 4 vGIC MMIO writes (DABT_LOW, in the kernel) and stage-2 faults on the guest's
 * first touches of its RAM (IABT_LOW / DABT_LOW). Any unexpected guest exception is reported through an
 * MMIO write to MMIO_USER + 0x100 and the VMM exits 3.
 * Output: "key=value" lines: the VMM's own counts (RESULT) and KVM's per-vCPU binary stats (STAT),
 * which tests/check_arm64.py compares with the traces.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#define GUEST_IPA 0x10000UL
#define GUEST_BYTES 0x10000UL
#define GICD_IPA 0x08000000UL       /* vGICv3 distributor, 64 KiB */
#define GICR_IPA 0x080A0000UL       /* redistributor of vCPU 0: RD + SGI frames, 128 KiB */
#define MMIO_USER 0x10000000UL      /* outside every memslot and device: exits to us */
#define MMIO_IOEVENTFD 0x10001000UL /* outside every memslot, caught by an ioeventfd */
/* core register ids: KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | offset in u32 words of
   struct kvm_regs (arch/arm64/include/uapi/asm/kvm.h): x0..x30 at 0, 2, ..., pc at 0x40 */
#define CORE_REG(words) (KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | (words))
#define REG_X(n) CORE_REG(2 * (n))
#define REG_PC CORE_REG(0x40)

/* The guest: vectors at +0 (VBAR_EL1 needs 2 KiB alignment), entry at +0x800. Registers set by the
   VMM: x19 = WFI_US, x21 = MMIO_USER, x22 = MMIO_IOEVENTFD, x23 = GICD, x24 = GICR. */
extern const uint8_t guest_begin[], guest_entry[], guest_end[];
__asm__(
    ".pushsection .rodata.guest,\"a\"\n"
    ".balign 4096\n"
    ".global guest_begin\n.global guest_entry\n.global guest_end\n" /* local symbols would reach C */
    "guest_begin:\n"
    ".rept 16\n"
    "  .balign 0x80\n"
    "  mrs x10, esr_el1\n"
    "  mrs x11, elr_el1\n"
    "  str x11, [x21, #0x108]\n"
    "  str x10, [x21, #0x100]\n" /* the VMM stops on this write */
    "  b .\n"
    ".endr\n"
    ".balign 0x800\n"
    "guest_entry:\n"
    "  adr x9, guest_begin\n"
    "  msr vbar_el1, x9\n"
    "  isb\n"
    /* x19: WFI_US in timer ticks = cntfrq * us / 1e6 */
    "  mrs x9, cntfrq_el0\n"
    "  mul x9, x9, x19\n"
    "  ldr x10, =1000000\n"
    "  udiv x19, x9, x10\n"
    /* vGIC: enable the distributor (ARE, Grp0, Grp1), make PPI 27 (virtual timer) group 1, priority
       0x80, enabled; then the CPU interface: priority mask 0xf0, group 1 on. */
    "  mov w9, #0x13\n"
    "  str w9, [x23]\n"                     /* GICD_CTLR */
    "  add x9, x24, #0x10000\n"             /* SGI frame */
    "  mov w10, #(1 << 27)\n"
    "  str w10, [x9, #0x80]\n"              /* GICR_IGROUPR0 */
    "  mov w11, #0x80\n"
    "  strb w11, [x9, #0x41b]\n"            /* GICR_IPRIORITYR byte 27 */
    "  str w10, [x9, #0x100]\n"             /* GICR_ISENABLER0 */
    "  mov x9, #0xf0\n"
    "  msr icc_pmr_el1, x9\n"
    "  mov x9, #1\n"
    "  msr icc_igrpen1_el1, x9\n"
    "  isb\n"
    "1:\n"
    "  ldr x0, =0x84000000\n"      /* PSCI_0_2_FN_PSCI_VERSION (include/uapi/linux/psci.h) */
    "  hvc #0\n"
    "  mrs x1, id_aa64mmfr0_el1\n"
    "  str x1, [x21]\n"
    "  str x1, [x22]\n"
    "  mrs x2, cntvct_el0\n"
    "  add x2, x2, x19\n"
    "  msr cntv_cval_el0, x2\n"
    "  mov x3, #1\n"
    "  msr cntv_ctl_el0, x3\n"              /* enabled, not masked */
    "  isb\n"
    "  wfi\n"
    "  msr cntv_ctl_el0, xzr\n"
    "  isb\n"
    "  ldr x4, [x21, #8]\n"
    "  cbz x4, 1b\n"
    "  ldr x0, =0x84000008\n"      /* PSCI_0_2_FN_SYSTEM_OFF */
    "  hvc #0\n"
    "  b .\n"
    ".ltorg\n"
    "guest_end:\n"
    ".popsection\n");

static void on_alarm(int sig) { (void)sig; }

static uint64_t get_reg(int vcpu, uint64_t id) {
  uint64_t value = 0;
  struct kvm_one_reg reg = {.id = id, .addr = (uint64_t)&value};
  ioctl(vcpu, KVM_GET_ONE_REG, &reg);
  return value;
}

static void die(const char* what) {
  fprintf(stderr, "kvmexits-arm64: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void set_reg(int vcpu, uint64_t id, uint64_t value) {
  struct kvm_one_reg reg = {.id = id, .addr = (uint64_t)&value};
  if (ioctl(vcpu, KVM_SET_ONE_REG, &reg) != 0) die("KVM_SET_ONE_REG");
}

static void device_attr(int dev, uint32_t group, uint64_t attr, const void* value, const char* what) {
  struct kvm_device_attr a = {.group = group, .attr = attr, .addr = (uint64_t)value};
  if (ioctl(dev, KVM_SET_DEVICE_ATTR, &a) != 0) die(what);
}

/* KVM's binary stats of the vCPU (KVM_GET_STATS_FD, Documentation/virt/kvm/api.rst): every scalar. */
static void print_stats(int vcpu) {
  int fd = ioctl(vcpu, KVM_GET_STATS_FD, NULL);
  if (fd < 0) die("KVM_GET_STATS_FD");
  struct kvm_stats_header h;
  if (pread(fd, &h, sizeof h, 0) != sizeof h) die("stats header");
  size_t desc_bytes = sizeof(struct kvm_stats_desc) + h.name_size;
  char* descs = malloc(desc_bytes * h.num_desc);
  if (pread(fd, descs, desc_bytes * h.num_desc, h.desc_offset) != (ssize_t)(desc_bytes * h.num_desc))
    die("stats descriptors");
  for (uint32_t i = 0; i < h.num_desc; i++) {
    struct kvm_stats_desc* d = (struct kvm_stats_desc*)(descs + i * desc_bytes);
    if (d->size != 1) continue;
    uint64_t v = 0;
    if (pread(fd, &v, sizeof v, h.data_offset + d->offset) != sizeof v) die("stats data");
    printf("STAT %s=%llu\n", d->name, (unsigned long long)v);
  }
  free(descs);
  close(fd);
}

int main(int argc, char** argv) {
  long iterations = argc > 1 ? strtol(argv[1], NULL, 0) : 100;
  long wfi_us = argc > 2 ? strtol(argv[2], NULL, 0) : 200;
  if (iterations < 1) iterations = 1;
  printf("START tid=%ld iterations=%ld wfi_us=%ld\n", (long)syscall(SYS_gettid), iterations, wfi_us);
  fflush(stdout);

  int kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
  if (kvm < 0) die("/dev/kvm");
  int vm = ioctl(kvm, KVM_CREATE_VM, 0);
  if (vm < 0) die("KVM_CREATE_VM");
  uint8_t* ram = mmap(NULL, GUEST_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ram == MAP_FAILED) die("mmap guest RAM");
  memcpy(ram, guest_begin, (size_t)(guest_end - guest_begin));
  struct kvm_userspace_memory_region slot = {
      .slot = 0, .guest_phys_addr = GUEST_IPA, .memory_size = GUEST_BYTES, .userspace_addr = (uint64_t)ram};
  if (ioctl(vm, KVM_SET_USER_MEMORY_REGION, &slot) != 0) die("KVM_SET_USER_MEMORY_REGION");

  int vcpu = ioctl(vm, KVM_CREATE_VCPU, 0);
  if (vcpu < 0) die("KVM_CREATE_VCPU");
  struct kvm_vcpu_init init;
  memset(&init, 0, sizeof init);
  if (ioctl(vm, KVM_ARM_PREFERRED_TARGET, &init) != 0) die("KVM_ARM_PREFERRED_TARGET");
  init.features[0] |= 1u << KVM_ARM_VCPU_PSCI_0_2;
  if (ioctl(vcpu, KVM_ARM_VCPU_INIT, &init) != 0) die("KVM_ARM_VCPU_INIT");

  /* The vGIC goes after the vCPUs: addresses, then init, before the first KVM_RUN. */
  struct kvm_create_device gic = {.type = KVM_DEV_TYPE_ARM_VGIC_V3};
  if (ioctl(vm, KVM_CREATE_DEVICE, &gic) != 0) die("KVM_CREATE_DEVICE vgic-v3");
  uint64_t dist = GICD_IPA, redist = GICR_IPA;
  device_attr(gic.fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_DIST, &dist, "vgic dist");
  device_attr(gic.fd, KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_REDIST, &redist, "vgic redist");
  device_attr(gic.fd, KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT, NULL, "vgic init");

  int efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (efd < 0) die("eventfd");
  struct kvm_ioeventfd ioev = {.addr = MMIO_IOEVENTFD, .len = 8, .fd = efd};
  if (ioctl(vm, KVM_IOEVENTFD, &ioev) != 0) die("KVM_IOEVENTFD");

  set_reg(vcpu, REG_PC, GUEST_IPA + (uint64_t)(guest_entry - guest_begin));
  set_reg(vcpu, REG_X(19), (uint64_t)wfi_us);
  set_reg(vcpu, REG_X(21), MMIO_USER);
  set_reg(vcpu, REG_X(22), MMIO_IOEVENTFD);
  set_reg(vcpu, REG_X(23), GICD_IPA);
  set_reg(vcpu, REG_X(24), GICR_IPA);

  printf("SETUP guest_bytes=%ld entry=0x%llx pc=0x%llx x21=0x%llx\n", (long)(guest_end - guest_begin),
         (unsigned long long)(GUEST_IPA + (uint64_t)(guest_entry - guest_begin)),
         (unsigned long long)get_reg(vcpu, REG_PC), (unsigned long long)get_reg(vcpu, REG_X(21)));
  fflush(stdout);
  long run_bytes = ioctl(kvm, KVM_GET_VCPU_MMAP_SIZE, 0);
  if (run_bytes <= 0) die("KVM_GET_VCPU_MMAP_SIZE");
  struct kvm_run* run = mmap(NULL, (size_t)run_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu, 0);
  if (run == MAP_FAILED) die("mmap kvm_run");

  /* A guard: a guest stuck inside KVM (a WFI nothing wakes) is interrupted by SIGALRM after
     GUARD_S seconds; the VMM then says where the guest was and exits 4. */
  const unsigned guard_s = argc > 3 ? (unsigned)strtoul(argv[3], NULL, 0) : 60;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_alarm; /* no SA_RESTART: KVM_RUN returns EINTR */
  sigaction(SIGALRM, &sa, NULL);
  alarm(guard_s);
  long runs = 0, mmio_writes = 0, mmio_reads = 0, intr = 0, other = 0;
  uint64_t panic_elr = 0;
  for (int done = 0; !done;) {
    runs++;
    if (ioctl(vcpu, KVM_RUN, NULL) != 0) {
      if (errno == EINTR) {
        intr++;
        if (alarm(0) == 0) {
          fprintf(stderr, "kvmexits-arm64: guest still running after %us: pc=0x%llx x4=0x%llx, %ld MMIO reads\n",
                  guard_s, (unsigned long long)get_reg(vcpu, REG_PC), (unsigned long long)get_reg(vcpu, REG_X(4)),
                  mmio_reads);
          return 4;
        }
        alarm(guard_s); /* not ours: re-arm (approximately) */
        continue;
      }
      die("KVM_RUN");
    }
    switch (run->exit_reason) {
      case KVM_EXIT_MMIO:
        if (run->mmio.is_write && run->mmio.phys_addr == MMIO_USER + 0x108) {
          memcpy(&panic_elr, run->mmio.data, 8);
        } else if (run->mmio.is_write && run->mmio.phys_addr == MMIO_USER + 0x100) {
          uint64_t esr;
          memcpy(&esr, run->mmio.data, 8);
          fprintf(stderr, "kvmexits-arm64: guest exception esr=0x%llx elr=0x%llx\n",
                  (unsigned long long)esr, (unsigned long long)panic_elr);
          return 3;
        } else if (run->mmio.is_write) {
          mmio_writes++;
        } else {
          mmio_reads++;
          uint64_t stop = mmio_reads >= iterations;
          memcpy(run->mmio.data, &stop, 8);
        }
        break;
      case KVM_EXIT_SYSTEM_EVENT:
        done = 1;
        break;
      default:
        fprintf(stderr, "kvmexits-arm64: unexpected exit_reason %u\n", run->exit_reason);
        if (++other > 10) return 2;
    }
  }
  uint64_t signals = 0;
  if (read(efd, &signals, sizeof signals) != sizeof signals) signals = 0;
  printf("RESULT iterations=%ld kvm_run_calls=%ld mmio_user_writes=%ld mmio_user_reads=%ld "
         "ioeventfd_signals=%llu eintr=%ld other=%ld\n",
         mmio_reads, runs, mmio_writes, mmio_reads, (unsigned long long)signals, intr, other);
  print_stats(vcpu);
  return 0;
}
