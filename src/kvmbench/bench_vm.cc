// x86-64 only: the VMM sets up long mode, CPUID and x86 MSR filters (see bench_runner.cc).
#if defined(__x86_64__)
#include "kvmbench/bench_vm.h"

#include <fcntl.h>
#include <linux/kvm.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <signal.h>
#include <sys/time.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "kvmbench/guest_abi.h"

namespace exitscope::kvmbench {
namespace {

// KVM_GET_API_VERSION has returned 12 since Linux 2.6.22 (Documentation/virt/kvm/api.rst).
constexpr int kKvmApiVersion = 12;
// Page-table entry bits (Intel SDM vol. 3 4.5, AMD APM vol. 2 5.3): present, writable, 2 MiB page.
constexpr uint64_t kPtePresent = 1ull << 0;
constexpr uint64_t kPteWritable = 1ull << 1;
constexpr uint64_t kPteLargePage = 1ull << 7;
// Control-register and EFER bits for 64-bit mode (SDM vol. 3 2.5, 2.2.1).
constexpr uint64_t kCr0Pe = 1ull << 0, kCr0Mp = 1ull << 1, kCr0Et = 1ull << 4, kCr0Ne = 1ull << 5, kCr0Wp = 1ull << 16,
                   kCr0Pg = 1ull << 31;
constexpr uint64_t kCr4Pae = 1ull << 5;
constexpr uint64_t kEferLme = 1ull << 8, kEferLma = 1ull << 10;
// RFLAGS bit 1 is reserved and always 1.
constexpr uint64_t kRflagsFixed = 1ull << 1;
// CPUID.01H:ECX.TSC_DEADLINE[bit 24]; KVM emulates it but leaves setting it to userspace
// (KVM_CAP_TSC_DEADLINE_TIMER, Documentation/virt/kvm/api.rst).
constexpr uint32_t kCpuidTscDeadlineBit = 1u << 24;
constexpr int kMaxCpuidEntries = 256;

// <linux/kvm.h> declares flexible arrays with __DECLARE_FLEX_ARRAY, whose empty struct member takes a
// byte in C++: struct kvm_cpuid2 and struct kvm_stats_desc get C++ sizes and member offsets that differ
// from the kernel's C layout (and so do the ioctl numbers derived from sizeof). These mirror the C
// layout of their fixed parts (include/uapi/linux/kvm.h, arch/x86/include/uapi/asm/kvm.h, Linux 6.1).
struct CpuidHeader {  // struct kvm_cpuid2 without its entries
  uint32_t nent;
  uint32_t padding;
};
struct StatsDescHeader {  // struct kvm_stats_desc without its name
  uint32_t flags;
  int16_t exponent;
  uint16_t size;
  uint32_t offset;
  uint32_t bucket_size;
};
static_assert(sizeof(CpuidHeader) == 8 && sizeof(StatsDescHeader) == 16);
static_assert(sizeof(kvm_cpuid_entry2) == 40);
constexpr unsigned long kIoctlGetSupportedCpuid = _IOWR(KVMIO, 0x05, CpuidHeader);
constexpr unsigned long kIoctlSetCpuid2 = _IOW(KVMIO, 0x90, CpuidHeader);

// A KVM_GET_SUPPORTED_CPUID / KVM_SET_CPUID2 argument: header then entries, in C layout.
class CpuidBuffer {
 public:
  CpuidBuffer() : bytes_(sizeof(CpuidHeader) + kMaxCpuidEntries * sizeof(kvm_cpuid_entry2)) {
    header()->nent = kMaxCpuidEntries;
  }
  void* arg() { return bytes_.data(); }
  CpuidHeader* header() { return reinterpret_cast<CpuidHeader*>(bytes_.data()); }
  kvm_cpuid_entry2* entries() { return reinterpret_cast<kvm_cpuid_entry2*>(bytes_.data() + sizeof(CpuidHeader)); }

 private:
  std::vector<uint8_t> bytes_;
};
// Per-vCPU binary stats we report (arch/x86/kvm/x86.c kvm_vcpu_stats_desc, Linux 5.14+).
constexpr const char* kStatNames[] = {"exits",      "io_exits",       "mmio_exits",   "halt_exits",       "irq_exits",
                                      "hypercalls", "insn_emulation", "signal_exits", "request_irq_exits"};

Error SysError(int code, std::string tag, std::string what) {
  return MakeError(code, std::move(tag), fmt::format("{}: {}", what, std::strerror(errno)));
}

void SetSegment(struct kvm_segment* s, uint16_t selector, uint8_t type, bool code64) {
  *s = {};
  s->base = 0;
  s->limit = 0xffffffff;
  s->selector = selector;
  s->type = type;
  s->present = 1;
  s->dpl = 0;
  s->s = 1;
  s->l = code64 ? 1 : 0;
  s->db = code64 ? 0 : 1;
  s->g = 1;
}

// A guest that stops syncing (our bug, or a host that never wakes a vCPU) must not hang the bench:
// SIGALRM every kWatchdogTick interrupts KVM_RUN (EINTR) so RunToSync can check the deadline.
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

// The vendor module that registered /dev/kvm: built-in or loaded, each has /sys/module/<name>.
std::string DetectKvmModule() {
  for (const char* m : {"kvm_intel", "kvm_amd", "kvm_pvm"}) {
    if (access(fmt::format("/sys/module/{}", m).c_str(), F_OK) == 0) return m;
  }
  return {};
}

bool CpuinfoHasHwVirt() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    for (std::string w; words >> w;) {
      if (w == "vmx" || w == "svm") return true;
    }
    return false;
  }
  return false;
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
                     "this host offers no KVM: enable virtualization in the firmware and load "
                     "kvm_intel or kvm_amd (modprobe kvm_amd), or run inside tools/kvmhost/run.sh");
  }
  int api = ioctl(host->kvm_fd, KVM_GET_API_VERSION, 0);
  if (api != kKvmApiVersion) {
    return MakeError(kExitUnavailable, "bench.kvm-api",
                     fmt::format("{} reports KVM API version {}, expected {}", device, api, kKvmApiVersion));
  }
  auto has = [&](int cap) { return ioctl(host->kvm_fd, KVM_CHECK_EXTENSION, cap) > 0; };
  host->user_msr = has(KVM_CAP_X86_USER_SPACE_MSR) && has(KVM_CAP_X86_MSR_FILTER);
  host->ioeventfd = has(KVM_CAP_IOEVENTFD);
  host->stats_fd = has(KVM_CAP_BINARY_STATS_FD);
  host->guest_debug = has(KVM_CAP_SET_GUEST_DEBUG);
  host->kvm_module = DetectKvmModule();
  host->hw_virt = CpuinfoHasHwVirt();

  // The vendor string KVM would show the guest (CPUID leaf 0 EBX:EDX:ECX).
  CpuidBuffer cpuid;
  if (ioctl(host->kvm_fd, kIoctlGetSupportedCpuid, cpuid.arg()) == 0) {
    for (uint32_t i = 0; i < cpuid.header()->nent; ++i) {
      const auto& e = cpuid.entries()[i];
      if (e.function != 0) continue;
      char id[13] = {};
      std::memcpy(id, &e.ebx, 4);
      std::memcpy(id + 4, &e.edx, 4);
      std::memcpy(id + 8, &e.ecx, 4);
      host->vendor_id = id;
    }
  }
  if (host->vendor_id == "AuthenticAMD" || host->vendor_id == "HygonGenuine") {
    host->vendor = CpuVendor::kAmd;
  } else if (host->vendor_id == "GenuineIntel") {
    host->vendor = CpuVendor::kIntel;
  }
  return host;
}

Result<std::unique_ptr<BenchVm>> BenchVm::Create(const KvmHost& host, VmKind kind) {
  std::unique_ptr<BenchVm> vm(new BenchVm());
  if (Status s = vm->Setup(host, kind); !s) return s.error();
  uint64_t ignored = 0;
  // The guest starts with a sync: from then on each Run() resumes it with a filled mailbox.
  if (Status s = vm->RunToSync(&ignored); !s) return s.error();
  return vm;
}

BenchVm::~BenchVm() {
  if (run_) munmap(run_, run_bytes_);
  if (ram_) munmap(ram_, KVMBENCH_RAM_BYTES);
  for (int fd : {stats_fd_, pio_eventfd_, mmio_eventfd_, vcpu_fd_, vm_fd_}) {
    if (fd >= 0) close(fd);
  }
}

Status BenchVm::Setup(const KvmHost& host, VmKind kind) {
  vm_fd_ = ioctl(host.kvm_fd, KVM_CREATE_VM, 0);
  if (vm_fd_ < 0) return SysError(kExitUnavailable, "bench.create-vm", "KVM_CREATE_VM");
  if (kind == VmKind::kIrqchip) {
    if (ioctl(vm_fd_, KVM_CREATE_IRQCHIP, 0) < 0) {
      return SysError(kExitUnavailable, "bench.irqchip", "KVM_CREATE_IRQCHIP");
    }
    kvm_pit_config pit = {};
    if (ioctl(vm_fd_, KVM_CREATE_PIT2, &pit) < 0) {
      return SysError(kExitUnavailable, "bench.pit", "KVM_CREATE_PIT2");
    }
  }
  if (host.user_msr) {
    kvm_enable_cap cap = {};
    cap.cap = KVM_CAP_X86_USER_SPACE_MSR;
    cap.args[0] = KVM_MSR_EXIT_REASON_FILTER;
    if (ioctl(vm_fd_, KVM_ENABLE_CAP, &cap) < 0) {
      return SysError(kExitUnavailable, "bench.user-msr", "KVM_ENABLE_CAP(KVM_CAP_X86_USER_SPACE_MSR)");
    }
    // A clear bit in a range's bitmap denies the access (Documentation/virt/kvm/api.rst 4.126).
    static uint8_t deny_bitmap[1] = {0};
    kvm_msr_filter filter = {};
    filter.flags = KVM_MSR_FILTER_DEFAULT_ALLOW;
    filter.ranges[0].flags = KVM_MSR_FILTER_READ | KVM_MSR_FILTER_WRITE;
    filter.ranges[0].nmsrs = 1;
    filter.ranges[0].base = KVMBENCH_MSR_USER;
    filter.ranges[0].bitmap = deny_bitmap;
    if (ioctl(vm_fd_, KVM_X86_SET_MSR_FILTER, &filter) < 0) {
      return SysError(kExitUnavailable, "bench.msr-filter", "KVM_X86_SET_MSR_FILTER");
    }
  }
  if (host.ioeventfd) {
    pio_eventfd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    mmio_eventfd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (pio_eventfd_ < 0 || mmio_eventfd_ < 0) return SysError(kExitSoftware, "bench.eventfd", "eventfd");
    kvm_ioeventfd pio = {};
    pio.addr = KVMBENCH_PORT_IOEVENTFD;
    pio.len = 4;
    pio.fd = pio_eventfd_;
    pio.flags = KVM_IOEVENTFD_FLAG_PIO;
    // len 0 matches any access width and also lands on KVM_FAST_MMIO_BUS (virt/kvm/eventfd.c).
    kvm_ioeventfd mmio = {};
    mmio.addr = KVMBENCH_MMIO_IOEVENTFD_GPA;
    mmio.len = 0;
    mmio.fd = mmio_eventfd_;
    if (ioctl(vm_fd_, KVM_IOEVENTFD, &pio) < 0 || ioctl(vm_fd_, KVM_IOEVENTFD, &mmio) < 0) {
      return SysError(kExitUnavailable, "bench.ioeventfd", "KVM_IOEVENTFD");
    }
  }
  if (Status s = SetupMemory(); !s) return s;
  if (Status s = SetupVcpu(host); !s) return s;
  if (host.stats_fd) {
    if (Status s = SetupStats(); !s) return s;
  }
  return Status::Ok();
}

Status BenchVm::SetGuestDebug(bool on) {
  if (on == guest_debug_) return Status::Ok();
  // debugreg[7] = 0 arms no breakpoint; with USE_HW_BP KVM still keeps DR intercepts on
  // (svm.c dr_interception / vmx.c handle_dr drop them only while vcpu->guest_debug == 0).
  kvm_guest_debug dbg = {};
  dbg.control = on ? (KVM_GUESTDBG_ENABLE | KVM_GUESTDBG_USE_HW_BP) : 0;
  if (ioctl(vcpu_fd_, KVM_SET_GUEST_DEBUG, &dbg) < 0) {
    return SysError(kExitUnavailable, "bench.guest-debug", "KVM_SET_GUEST_DEBUG");
  }
  guest_debug_ = on;
  return Status::Ok();
}

Status BenchVm::SetupMemory() {
  void* mem =
      mmap(nullptr, KVMBENCH_RAM_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mem == MAP_FAILED) return SysError(kExitSoftware, "bench.mmap", "mmap guest RAM");
  ram_ = static_cast<uint8_t*>(mem);
  auto code = GuestCode();
  std::memcpy(ram_ + KVMBENCH_CODE_GPA, code.data(), code.size());

  // Identity map of the low 4 GiB with 2 MiB pages: covers RAM and the MMIO test addresses.
  auto* pml4 = reinterpret_cast<uint64_t*>(ram_ + KVMBENCH_PML4_GPA);
  auto* pdpt = reinterpret_cast<uint64_t*>(ram_ + KVMBENCH_PDPT_GPA);
  pml4[0] = KVMBENCH_PDPT_GPA | kPtePresent | kPteWritable;
  for (uint64_t gib = 0; gib < 4; ++gib) {
    uint64_t pd_gpa = KVMBENCH_PD_GPA + gib * 0x1000;
    pdpt[gib] = pd_gpa | kPtePresent | kPteWritable;
    auto* pd = reinterpret_cast<uint64_t*>(ram_ + pd_gpa);
    for (uint64_t i = 0; i < 512; ++i) {
      pd[i] = ((gib << 30) + (i << 21)) | kPtePresent | kPteWritable | kPteLargePage;
    }
  }
  kvm_userspace_memory_region region = {};
  region.slot = 0;
  region.guest_phys_addr = 0;
  region.memory_size = KVMBENCH_RAM_BYTES;
  region.userspace_addr = reinterpret_cast<uint64_t>(ram_);
  if (ioctl(vm_fd_, KVM_SET_USER_MEMORY_REGION, &region) < 0) {
    return SysError(kExitUnavailable, "bench.memslot", "KVM_SET_USER_MEMORY_REGION");
  }
  return Status::Ok();
}

Status BenchVm::SetupVcpu(const KvmHost& host) {
  vcpu_fd_ = ioctl(vm_fd_, KVM_CREATE_VCPU, 0);
  if (vcpu_fd_ < 0) return SysError(kExitUnavailable, "bench.create-vcpu", "KVM_CREATE_VCPU");
  int bytes = ioctl(host.kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
  if (bytes <= 0) return SysError(kExitUnavailable, "bench.mmap-size", "KVM_GET_VCPU_MMAP_SIZE");
  run_bytes_ = static_cast<size_t>(bytes);
  void* run = mmap(nullptr, run_bytes_, PROT_READ | PROT_WRITE, MAP_SHARED, vcpu_fd_, 0);
  if (run == MAP_FAILED) return SysError(kExitSoftware, "bench.mmap-run", "mmap kvm_run");
  run_ = static_cast<kvm_run*>(run);

  CpuidBuffer cpuid;
  if (ioctl(host.kvm_fd, kIoctlGetSupportedCpuid, cpuid.arg()) < 0) {
    return SysError(kExitUnavailable, "bench.cpuid", "KVM_GET_SUPPORTED_CPUID");
  }
  for (uint32_t i = 0; i < cpuid.header()->nent; ++i) {
    if (cpuid.entries()[i].function == 1) cpuid.entries()[i].ecx |= kCpuidTscDeadlineBit;
  }
  if (ioctl(vcpu_fd_, kIoctlSetCpuid2, cpuid.arg()) < 0) {
    return SysError(kExitUnavailable, "bench.cpuid", "KVM_SET_CPUID2");
  }

  kvm_sregs sregs = {};
  if (ioctl(vcpu_fd_, KVM_GET_SREGS, &sregs) < 0) return SysError(kExitSoftware, "bench.sregs", "KVM_GET_SREGS");
  // Code: execute/read, accessed (type 11); data: read/write, accessed (type 3).
  SetSegment(&sregs.cs, 0x8, 11, true);
  SetSegment(&sregs.ds, 0x10, 3, false);
  sregs.es = sregs.fs = sregs.gs = sregs.ss = sregs.ds;
  sregs.cr3 = KVMBENCH_PML4_GPA;
  sregs.cr4 = kCr4Pae;
  sregs.cr0 = kCr0Pe | kCr0Mp | kCr0Et | kCr0Ne | kCr0Wp | kCr0Pg;
  sregs.efer = kEferLme | kEferLma;
  if (ioctl(vcpu_fd_, KVM_SET_SREGS, &sregs) < 0) return SysError(kExitSoftware, "bench.sregs", "KVM_SET_SREGS");

  kvm_regs regs = {};
  regs.rip = GuestMainAddress();
  regs.rsp = KVMBENCH_STACK_TOP_GPA;
  regs.rflags = kRflagsFixed;
  if (ioctl(vcpu_fd_, KVM_SET_REGS, &regs) < 0) return SysError(kExitSoftware, "bench.regs", "KVM_SET_REGS");

  int khz = ioctl(vcpu_fd_, KVM_GET_TSC_KHZ, 0);
  tsc_khz_ = khz > 0 ? static_cast<uint64_t>(khz) : 0;
  return Status::Ok();
}

Status BenchVm::SetupStats() {
  stats_fd_ = ioctl(vcpu_fd_, KVM_GET_STATS_FD, 0);
  if (stats_fd_ < 0) return SysError(kExitUnavailable, "bench.stats", "KVM_GET_STATS_FD");
  kvm_stats_header header = {};
  if (pread(stats_fd_, &header, sizeof(header), 0) != sizeof(header)) {
    return SysError(kExitSoftware, "bench.stats", "read KVM stats header");
  }
  // Each descriptor is followed by its name; name_size includes the NUL (api.rst 4.133).
  size_t desc_bytes = sizeof(StatsDescHeader) + header.name_size;
  std::vector<uint8_t> descs(desc_bytes * header.num_desc);
  if (pread(stats_fd_, descs.data(), descs.size(), header.desc_offset) != static_cast<ssize_t>(descs.size())) {
    return SysError(kExitSoftware, "bench.stats", "read KVM stats descriptors");
  }
  for (uint32_t i = 0; i < header.num_desc; ++i) {
    const uint8_t* raw = descs.data() + i * desc_bytes;
    StatsDescHeader d_fixed;
    std::memcpy(&d_fixed, raw, sizeof(d_fixed));
    const auto* d = &d_fixed;
    const char* name_bytes = reinterpret_cast<const char*>(raw + sizeof(StatsDescHeader));
    std::string name(name_bytes, strnlen(name_bytes, header.name_size));
    if ((d->flags & KVM_STATS_TYPE_MASK) != KVM_STATS_TYPE_CUMULATIVE || d->size != 1) continue;
    for (const char* wanted : kStatNames) {
      if (name == wanted) stat_slots_.push_back({name, header.data_offset + d->offset});
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
  kvm_regs regs = {};
  ioctl(vcpu_fd_, KVM_GET_REGS, &regs);
  const auto rip = static_cast<uint64_t>(regs.rip);
  // The guest runs only its own code, inside its RAM. A RIP elsewhere (seen in CI and in a local
  // boot: 0xffffffffc0…20c, the host kernel's module area, when KVM itself ran on QEMU's emulated
  // SVM) says the state KVM hands back is not the guest's: the host's virtualization, not the
  // benchmark, lost track.
  if (rip >= KVMBENCH_RAM_BYTES) {
    return MakeError(kExitSoftware, std::move(tag),
                     fmt::format("{} (guest rip {:#x}, outside the guest's {} MiB: the vCPU state read "
                                 "back is not the benchmark guest's)",
                                 what, rip, KVMBENCH_RAM_BYTES >> 20),
                     "the host's virtualization lost the guest's state (seen when KVM runs nested on an "
                     "emulated CPU); run the benchmark again, and report it with the kernel version if "
                     "it recurs on real hardware");
  }
  return MakeError(kExitSoftware, std::move(tag), fmt::format("{} (guest rip {:#x})", what, rip),
                   "this is a bug in exitscope's benchmark guest or VMM; please report it with the "
                   "kernel version");
}

Status BenchVm::RunToSync(uint64_t* userspace_exits) {
  Watchdog watchdog;
  const auto deadline = std::chrono::steady_clock::now() + kGuestDeadline;
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
    switch (run_->exit_reason) {
      case KVM_EXIT_IO: {
        auto* data = reinterpret_cast<uint8_t*>(run_) + run_->io.data_offset;
        if (run_->io.port == KVMBENCH_PORT_SYNC && run_->io.direction == KVM_EXIT_IO_OUT) {
          return Status::Ok();
        }
        if (run_->io.port == KVMBENCH_PORT_USER_IN && run_->io.direction == KVM_EXIT_IO_IN) {
          std::memset(data, 0, static_cast<size_t>(run_->io.size) * run_->io.count);
        } else if (run_->io.port != KVMBENCH_PORT_USER_OUT) {
          return VcpuError("bench.unexpected-exit", fmt::format("unexpected port {:#x} access", run_->io.port));
        }
        break;
      }
      case KVM_EXIT_MMIO:
        if (run_->mmio.phys_addr != KVMBENCH_MMIO_USER_GPA) {
          return VcpuError("bench.unexpected-exit", fmt::format("unexpected MMIO at {:#x}", run_->mmio.phys_addr));
        }
        if (!run_->mmio.is_write) std::memset(run_->mmio.data, 0, sizeof(run_->mmio.data));
        break;
      case KVM_EXIT_X86_RDMSR:
        run_->msr.error = 0;
        run_->msr.data = 0;
        break;
      case KVM_EXIT_X86_WRMSR: run_->msr.error = 0; break;
      case KVM_EXIT_HLT: break;
      case KVM_EXIT_INTR:
        if (std::chrono::steady_clock::now() > deadline) {
          return VcpuError("bench.guest-timeout",
                           fmt::format("the guest did not finish within {} s", kGuestDeadline.count()));
        }
        continue;  // our watchdog's signal, not a guest exit
      default:
        return VcpuError("bench.unexpected-exit", fmt::format("unexpected KVM exit reason {}", run_->exit_reason));
    }
    ++*userspace_exits;
  }
}

Result<GuestRun> BenchVm::Run(uint64_t entry_gpa, uint64_t iterations) {
  auto* mailbox = ram_ + KVMBENCH_MAILBOX_GPA;
  std::memcpy(mailbox + KVMBENCH_MB_ENTRY, &entry_gpa, sizeof(entry_gpa));
  std::memcpy(mailbox + KVMBENCH_MB_ITERATIONS, &iterations, sizeof(iterations));
  uint64_t drained = 0;
  for (int fd : {pio_eventfd_, mmio_eventfd_}) {
    if (fd >= 0) (void)!read(fd, &drained, sizeof(drained));
  }
  auto before = ReadStats();
  if (!before) return before.error();
  GuestRun out;
  if (Status s = RunToSync(&out.userspace_exits); !s) return s.error();
  auto after = ReadStats();
  if (!after) return after.error();
  for (const auto& [name, v] : *after) out.kvm_stats[name] = v - (*before)[name];
  // The sync OUT that ended the run is one exit (and one io exit) of its own.
  for (const char* own : {"exits", "io_exits"}) {
    if (auto it = out.kvm_stats.find(own); it != out.kvm_stats.end() && it->second > 0) --it->second;
  }
  for (int fd : {pio_eventfd_, mmio_eventfd_}) {
    uint64_t n = 0;
    if (fd >= 0 && read(fd, &n, sizeof(n)) == sizeof(n)) out.ioeventfd_signals += n;
  }
  std::memcpy(&out.cycles, mailbox + KVMBENCH_MB_CYCLES, sizeof(out.cycles));
  return out;
}

}  // namespace exitscope::kvmbench
#endif  // __x86_64__
