// The arm64 VMM of `exitscope bench` (bench_vm.h's interface; bench_vm.cc is the x86-64 one): one VM
// with one vCPU (PSCI 0.2) running guest_code_arm64.S at EL1 with the MMU off, an in-kernel vGICv3
// (without it a WFI on the guest's timer never ends on Linux 6.1, see tools/kvmhost-arm64/run.sh) and
// an MMIO ioeventfd. The guest's clock is the virtual counter: "cycles" are its ticks and tsc_khz is
// CNTFRQ_EL0 / 1000. Built on arm64 only.
#if defined(__aarch64__)
#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "kvmbench/bench_vm.h"
#include "kvmbench/guest_abi.h"
#include "kvmbench/guest_abi_arm64.h"

namespace exitscope::kvmbench {
namespace {

// KVM_GET_API_VERSION has returned 12 since Linux 2.6.22 (Documentation/virt/kvm/api.rst).
constexpr int kKvmApiVersion = 12;
// struct kvm_stats_desc without its flexible name, in the kernel's C layout (see bench_vm.cc).
struct StatsDescHeader {
  uint32_t flags;
  int16_t exponent;
  uint16_t size;
  uint32_t offset;
  uint32_t bucket_size;
};
static_assert(sizeof(StatsDescHeader) == 16);
// Per-vCPU binary stats we report (arch/arm64/kvm/guest.c kvm_vcpu_stats_desc, Linux 5.14+).
constexpr const char* kStatNames[] = {"exits",          "hvc_exit_stat",    "wfe_exit_stat", "wfi_exit_stat",
                                      "mmio_exit_user", "mmio_exit_kernel", "signal_exits"};
// Core register ids: KVM_REG_ARM64 | U64 | KVM_REG_ARM_CORE | offset in 32-bit words of struct
// kvm_regs (arch/arm64/include/uapi/asm/kvm.h): x0..x30 at 2n, pc at 0x40.
constexpr uint64_t CoreReg(uint64_t words) { return KVM_REG_ARM64 | KVM_REG_SIZE_U64 | KVM_REG_ARM_CORE | words; }
constexpr uint64_t kRegPc = CoreReg(0x40);
constexpr uint64_t RegX(int n) { return CoreReg(2 * static_cast<uint64_t>(n)); }

Error SysError(int code, std::string tag, std::string what) {
  return MakeError(code, std::move(tag), fmt::format("{}: {}", what, std::strerror(errno)));
}

// A guest that stops syncing must not hang the bench: SIGALRM every tick interrupts KVM_RUN (EINTR)
// so RunToSync can check the deadline (as bench_vm.cc does).
constexpr auto kWatchdogTick = std::chrono::milliseconds(500);
constexpr auto kGuestDeadline = std::chrono::seconds(60);

void NoopSignalHandler(int) {}

class Watchdog {
 public:
  Watchdog() {
    struct sigaction sa = {};
    sa.sa_handler = NoopSignalHandler;  // no SA_RESTART: KVM_RUN must return EINTR
    sigaction(SIGALRM, &sa, &old_);
    itimerval timer = {};
    timer.it_interval.tv_usec = timer.it_value.tv_usec =
        std::chrono::duration_cast<std::chrono::microseconds>(kWatchdogTick).count();
    setitimer(ITIMER_REAL, &timer, nullptr);
  }
  ~Watchdog() {
    itimerval off = {};
    setitimer(ITIMER_REAL, &off, nullptr);
    sigaction(SIGALRM, &old_, nullptr);
  }

 private:
  struct sigaction old_ = {};
};

uint64_t CounterFrequency() {
  uint64_t hz = 0;
  asm volatile("mrs %0, cntfrq_el0" : "=r"(hz));
  return hz;
}

}  // namespace

KvmHost::~KvmHost() {
  if (kvm_fd >= 0) close(kvm_fd);
}

Result<std::unique_ptr<KvmHost>> OpenKvmHost(const std::string& device) {
  auto host = std::make_unique<KvmHost>();
  host->device = device;
  host->kvm_fd = open(device.c_str(), O_RDWR | O_CLOEXEC);
  if (host->kvm_fd < 0) {
    if (errno == EACCES || errno == EPERM) {
      return MakeError(kExitNoPerm, "bench.kvm-permission",
                       fmt::format("cannot open {}: {}", device, std::strerror(errno)),
                       "add yourself to the 'kvm' group (sudo usermod -aG kvm $USER, then log in "
                       "again) or run as root");
    }
    return MakeError(kExitUnavailable, "bench.no-kvm", fmt::format("cannot open {}: {}", device, std::strerror(errno)),
                     "this host offers no KVM: boot the kernel at EL2 (KVM needs it), or run inside "
                     "tools/kvmhost-arm64/run.sh");
  }
  int api = ioctl(host->kvm_fd, KVM_GET_API_VERSION, 0);
  if (api != kKvmApiVersion) {
    return MakeError(kExitUnavailable, "bench.kvm-api",
                     fmt::format("{} reports KVM API version {}, expected {}", device, api, kKvmApiVersion));
  }
  auto has = [&](int cap) { return ioctl(host->kvm_fd, KVM_CHECK_EXTENSION, cap) > 0; };
  host->ioeventfd = has(KVM_CAP_IOEVENTFD);
  host->stats_fd = has(KVM_CAP_BINARY_STATS_FD);
  host->guest_debug = has(KVM_CAP_SET_GUEST_DEBUG);
  host->kvm_module = "kvm";  // arm64 KVM is built into the kernel: no vendor module
  host->hw_virt = true;      // /dev/kvm on arm64 means the kernel runs at EL2
  host->vendor = CpuVendor::kOther;
  host->vendor_id = "aarch64";
  return host;
}

Result<std::unique_ptr<BenchVm>> BenchVm::Create(const KvmHost& host, VmKind kind) {
  std::unique_ptr<BenchVm> vm(new BenchVm());
  if (Status s = vm->Setup(host, kind); !s) return s.error();
  uint64_t ignored = 0;
  if (Status s = vm->RunToSync(&ignored); !s) return s.error();
  return vm;
}

BenchVm::~BenchVm() {
  if (run_) munmap(run_, run_bytes_);
  if (ram_) munmap(ram_, KVMBENCH_A64_RAM_BYTES);
  for (int fd : {mmio_eventfd_, stats_fd_, vcpu_fd_, vm_fd_}) {
    if (fd >= 0) close(fd);
  }
}

Status BenchVm::Setup(const KvmHost& host, VmKind) {
  vm_fd_ = ioctl(host.kvm_fd, KVM_CREATE_VM, 0);
  if (vm_fd_ < 0) return SysError(kExitUnavailable, "bench.create-vm", "KVM_CREATE_VM");
  if (Status s = SetupMemory(); !s) return s;
  if (Status s = SetupVcpu(host); !s) return s;
  if (host.ioeventfd) {
    mmio_eventfd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (mmio_eventfd_ < 0) return SysError(kExitSoftware, "bench.eventfd", "eventfd");
    kvm_ioeventfd ev = {};
    ev.addr = KVMBENCH_A64_MMIO_GPA + KVMBENCH_A64_MMIO_IOEVENTFD;
    ev.len = 8;
    ev.fd = mmio_eventfd_;
    if (ioctl(vm_fd_, KVM_IOEVENTFD, &ev) < 0) return SysError(kExitUnavailable, "bench.ioeventfd", "KVM_IOEVENTFD");
  }
  if (host.stats_fd) return SetupStats();
  return Status::Ok();
}

Status BenchVm::SetupMemory() {
  void* ram = mmap(nullptr, KVMBENCH_A64_RAM_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (ram == MAP_FAILED) return SysError(kExitSoftware, "bench.mmap-ram", "mmap guest RAM");
  ram_ = static_cast<uint8_t*>(ram);
  auto code = GuestCode();
  std::memcpy(ram_ + (KVMBENCH_A64_CODE_GPA - KVMBENCH_A64_RAM_GPA), code.data(), code.size());
  kvm_userspace_memory_region region = {};
  region.guest_phys_addr = KVMBENCH_A64_RAM_GPA;
  region.memory_size = KVMBENCH_A64_RAM_BYTES;
  region.userspace_addr = reinterpret_cast<uint64_t>(ram_);
  if (ioctl(vm_fd_, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
    return SysError(kExitUnavailable, "bench.memslot", "KVM_SET_USER_MEMORY_REGION");
  }
  return Status::Ok();
}

Status BenchVm::SetupVcpu(const KvmHost& host) {
  vcpu_fd_ = ioctl(vm_fd_, KVM_CREATE_VCPU, 0);
  if (vcpu_fd_ < 0) return SysError(kExitUnavailable, "bench.create-vcpu", "KVM_CREATE_VCPU");
  kvm_vcpu_init init = {};
  if (ioctl(vm_fd_, KVM_ARM_PREFERRED_TARGET, &init) < 0) {
    return SysError(kExitUnavailable, "bench.vcpu-init", "KVM_ARM_PREFERRED_TARGET");
  }
  init.features[0] |= 1u << KVM_ARM_VCPU_PSCI_0_2;
  if (ioctl(vcpu_fd_, KVM_ARM_VCPU_INIT, &init) < 0) {
    return SysError(kExitUnavailable, "bench.vcpu-init", "KVM_ARM_VCPU_INIT");
  }
  // The vGIC goes after the vCPUs: frame addresses, then init, before the first KVM_RUN.
  kvm_create_device gic = {};
  gic.type = KVM_DEV_TYPE_ARM_VGIC_V3;
  if (ioctl(vm_fd_, KVM_CREATE_DEVICE, &gic) < 0) {
    return SysError(kExitUnavailable, "bench.vgic", "KVM_CREATE_DEVICE vgic-v3");
  }
  uint64_t dist = KVMBENCH_A64_GICD_GPA, redist = KVMBENCH_A64_GICR_GPA;
  struct Attr {
    uint32_t group;
    uint64_t attr;
    uint64_t* value;
  };
  for (const Attr& a : {Attr{KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_DIST, &dist},
                        Attr{KVM_DEV_ARM_VGIC_GRP_ADDR, KVM_VGIC_V3_ADDR_TYPE_REDIST, &redist},
                        Attr{KVM_DEV_ARM_VGIC_GRP_CTRL, KVM_DEV_ARM_VGIC_CTRL_INIT, nullptr}}) {
    kvm_device_attr da = {};
    da.group = a.group;
    da.attr = a.attr;
    da.addr = reinterpret_cast<uint64_t>(a.value);
    if (ioctl(static_cast<int>(gic.fd), KVM_SET_DEVICE_ATTR, &da) < 0) {
      return SysError(kExitUnavailable, "bench.vgic", "KVM_SET_DEVICE_ATTR vgic-v3");
    }
  }
  const std::pair<uint64_t, uint64_t> regs[] = {
      {kRegPc, GuestMainAddress()},      {RegX(19), KVMBENCH_A64_MAILBOX_GPA}, {RegX(20), KVMBENCH_A64_MMIO_GPA},
      {RegX(21), KVMBENCH_A64_GICD_GPA}, {RegX(22), KVMBENCH_A64_GICR_GPA},
  };
  for (const auto& [id, value] : regs) {
    uint64_t v = value;
    kvm_one_reg reg = {};
    reg.id = id;
    reg.addr = reinterpret_cast<uint64_t>(&v);
    if (ioctl(vcpu_fd_, KVM_SET_ONE_REG, &reg) < 0) return SysError(kExitSoftware, "bench.regs", "KVM_SET_ONE_REG");
  }
  int bytes = ioctl(host.kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
  if (bytes <= 0) return SysError(kExitUnavailable, "bench.mmap-size", "KVM_GET_VCPU_MMAP_SIZE");
  run_bytes_ = static_cast<size_t>(bytes);
  void* run = mmap(nullptr, run_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu_fd_, 0);
  if (run == MAP_FAILED) return SysError(kExitSoftware, "bench.mmap-run", "mmap kvm_run");
  run_ = static_cast<kvm_run*>(run);
  tsc_khz_ = CounterFrequency() / 1000;  // the guest's virtual counter runs at the host's CNTFRQ
  return Status::Ok();
}

Status BenchVm::SetGuestDebug(bool on) {
  if (on) {
    return MakeError(kExitSoftware, "bench.guest-debug", "no arm64 bench test uses KVM_SET_GUEST_DEBUG");
  }
  return Status::Ok();
}

Status BenchVm::SetupStats() {
  stats_fd_ = ioctl(vcpu_fd_, KVM_GET_STATS_FD, 0);
  if (stats_fd_ < 0) return SysError(kExitUnavailable, "bench.stats", "KVM_GET_STATS_FD");
  kvm_stats_header header = {};
  if (pread(stats_fd_, &header, sizeof(header), 0) != sizeof(header)) {
    return SysError(kExitSoftware, "bench.stats", "read KVM stats header");
  }
  size_t desc_bytes = sizeof(StatsDescHeader) + header.name_size;
  std::vector<uint8_t> descs(desc_bytes * header.num_desc);
  if (pread(stats_fd_, descs.data(), descs.size(), header.desc_offset) != static_cast<ssize_t>(descs.size())) {
    return SysError(kExitSoftware, "bench.stats", "read KVM stats descriptors");
  }
  for (uint32_t i = 0; i < header.num_desc; ++i) {
    const uint8_t* raw = descs.data() + i * desc_bytes;
    StatsDescHeader d;
    std::memcpy(&d, raw, sizeof(d));
    const char* name_bytes = reinterpret_cast<const char*>(raw + sizeof(StatsDescHeader));
    std::string name(name_bytes, strnlen(name_bytes, header.name_size));
    if ((d.flags & KVM_STATS_TYPE_MASK) != KVM_STATS_TYPE_CUMULATIVE || d.size != 1) continue;
    for (const char* wanted : kStatNames) {
      if (name == wanted) stat_slots_.push_back({name, header.data_offset + d.offset});
    }
  }
  return Status::Ok();
}

Result<std::map<std::string, uint64_t>> BenchVm::ReadStats() {
  std::map<std::string, uint64_t> out;
  for (const auto& slot : stat_slots_) {
    uint64_t v = 0;
    if (pread(stats_fd_, &v, sizeof(v), static_cast<off_t>(slot.offset)) != sizeof(v)) {
      return SysError(kExitSoftware, "bench.stats", "read KVM stat " + slot.name);
    }
    out[slot.name] = v;
  }
  return out;
}

Error BenchVm::VcpuError(std::string tag, std::string what) {
  uint64_t pc = 0;
  kvm_one_reg reg = {};
  reg.id = kRegPc;
  reg.addr = reinterpret_cast<uint64_t>(&pc);
  ioctl(vcpu_fd_, KVM_GET_ONE_REG, &reg);
  return MakeError(kExitSoftware, std::move(tag), fmt::format("{} (guest pc {:#x})", what, pc),
                   "this is a bug in exitscope's benchmark guest or VMM; please report it with the "
                   "kernel version");
}

Status BenchVm::RunToSync(uint64_t* userspace_exits) {
  Watchdog watchdog;
  const auto deadline = std::chrono::steady_clock::now() + kGuestDeadline;
  uint64_t panic_elr = 0;
  for (;;) {
    if (ioctl(vcpu_fd_, KVM_RUN, 0) < 0) {
      if (errno == EINTR || errno == EAGAIN) {
        if (std::chrono::steady_clock::now() > deadline) {
          return VcpuError("bench.guest-timeout",
                           fmt::format("the guest did not finish within {} s", kGuestDeadline.count()));
        }
        continue;
      }
      return SysError(kExitSoftware, "bench.kvm-run", "KVM_RUN");
    }
    if (run_->exit_reason == KVM_EXIT_INTR) continue;  // our watchdog's signal
    if (run_->exit_reason != KVM_EXIT_MMIO) {
      return VcpuError("bench.unexpected-exit", fmt::format("unexpected KVM exit reason {}", run_->exit_reason));
    }
    const uint64_t offset = run_->mmio.phys_addr - KVMBENCH_A64_MMIO_GPA;
    if (offset == KVMBENCH_A64_MMIO_SYNC && run_->mmio.is_write) return Status::Ok();
    if (offset == KVMBENCH_A64_MMIO_PANIC + 8 && run_->mmio.is_write) {
      std::memcpy(&panic_elr, run_->mmio.data, sizeof(panic_elr));
      continue;
    }
    if (offset == KVMBENCH_A64_MMIO_PANIC && run_->mmio.is_write) {
      uint64_t esr = 0;
      std::memcpy(&esr, run_->mmio.data, sizeof(esr));
      return VcpuError("bench.guest-exception",
                       fmt::format("the guest took an exception: ESR {:#x} at {:#x}", esr, panic_elr));
    }
    if (offset != KVMBENCH_A64_MMIO_USER) {
      return VcpuError("bench.unexpected-exit", fmt::format("unexpected MMIO at {:#x}", run_->mmio.phys_addr));
    }
    if (!run_->mmio.is_write) std::memset(run_->mmio.data, 0, sizeof(run_->mmio.data));
    ++*userspace_exits;
  }
}

Result<GuestRun> BenchVm::Run(uint64_t entry_gpa, uint64_t iterations) {
  auto* mailbox = ram_ + (KVMBENCH_A64_MAILBOX_GPA - KVMBENCH_A64_RAM_GPA);
  std::memcpy(mailbox + KVMBENCH_MB_ENTRY, &entry_gpa, sizeof(entry_gpa));
  std::memcpy(mailbox + KVMBENCH_MB_ITERATIONS, &iterations, sizeof(iterations));
  uint64_t drained = 0;
  if (mmio_eventfd_ >= 0) (void)!read(mmio_eventfd_, &drained, sizeof(drained));
  auto before = ReadStats();
  if (!before) return before.error();
  GuestRun out;
  if (Status s = RunToSync(&out.userspace_exits); !s) return s.error();
  auto after = ReadStats();
  if (!after) return after.error();
  for (const auto& [name, v] : *after) out.kvm_stats[name] = v - (*before)[name];
  // The sync store that ended the run is one exit (and one MMIO exit to us) of its own.
  for (const char* own : {"exits", "mmio_exit_user"}) {
    if (auto it = out.kvm_stats.find(own); it != out.kvm_stats.end() && it->second > 0) --it->second;
  }
  uint64_t n = 0;
  if (mmio_eventfd_ >= 0 && read(mmio_eventfd_, &n, sizeof(n)) == sizeof(n)) out.ioeventfd_signals = n;
  std::memcpy(&out.cycles, mailbox + KVMBENCH_MB_CYCLES, sizeof(out.cycles));
  return out;
}

}  // namespace exitscope::kvmbench
#endif  // __aarch64__
