// A minimal KVM VMM for `exitscope bench`: one VM with one vCPU running the built-in guest
// (guest_code.S) in 64-bit long mode, plus the devices the tests need (in-kernel irqchip and PIT, an MSR
// filter, ioeventfds). In: the /dev/kvm path and the VM kind. Out: per guest call, the guest's TSC
// cycles and what KVM counted (its binary stats, userspace exits, ioeventfd signals).
// Assumption: Linux >= 5.14 for per-vCPU binary stats; older kernels still run, without exit counts.
#pragma once

#include <linux/kvm.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kvmbench/bench_tests.h"
#include "base/result.h"

namespace exitscope::kvmbench {

// What the host's KVM offers, probed once on /dev/kvm.
struct KvmHost {
  int kvm_fd = -1;
  std::string device;
  CpuVendor vendor = CpuVendor::kOther;
  std::string vendor_id;     // "AuthenticAMD", "GenuineIntel"
  bool user_msr = false;     // KVM_CAP_X86_USER_SPACE_MSR and KVM_CAP_X86_MSR_FILTER
  bool ioeventfd = false;    // KVM_CAP_IOEVENTFD
  bool stats_fd = false;     // KVM_CAP_BINARY_STATS_FD
  bool guest_debug = false;  // KVM_CAP_SET_GUEST_DEBUG
  // The vendor module behind /dev/kvm (kvm_intel, kvm_amd, kvm_pvm; "" if none is visible) and
  // whether /proc/cpuinfo shows hardware virtualization (vmx or svm).
  std::string kvm_module;
  bool hw_virt = false;
  // KVM without VMX/SVM (kvm_pvm, the Pagetable-based VM): our guest is not PVM-enlightened, so KVM
  // runs it in its x86 instruction emulator. There are no hardware exits then: no kvm_exit events,
  // and the "exits" stat counts returns to KVM's run loop, each after a batch of emulated instructions.
  bool EmulatesGuest() const { return kvm_module == "kvm_pvm" || (!hw_virt && kvm_module.empty()); }
  ~KvmHost();
};

// Opens the device: error 69 when it is missing, 77 when we may not open it.
Result<std::unique_ptr<KvmHost>> OpenKvmHost(const std::string& device);

struct GuestRun {
  uint64_t cycles = 0;                        // guest TSC delta over all iterations
  uint64_t userspace_exits = 0;               // KVM_RUN returns, not counting the sync port
  uint64_t ioeventfd_signals = 0;             // eventfd counter increments during the run
  std::map<std::string, uint64_t> kvm_stats;  // deltas of per-vCPU cumulative stats ("exits", ...)
};

class BenchVm {
 public:
  static Result<std::unique_ptr<BenchVm>> Create(const KvmHost& host, VmKind kind);
  ~BenchVm();
  BenchVm(const BenchVm&) = delete;
  BenchVm& operator=(const BenchVm&) = delete;

  // Runs the guest function at entry_gpa for `iterations` (> 0) and returns once the guest syncs.
  Result<GuestRun> Run(uint64_t entry_gpa, uint64_t iterations);
  uint64_t tsc_khz() const { return tsc_khz_; }
  // Host-side guest debugging with hardware breakpoints but none armed: only its side effect on DR
  // intercepts matters to the bench. Off again when `on` is false, so later tests see a plain vCPU.
  Status SetGuestDebug(bool on);

 private:
  BenchVm() = default;
  Status Setup(const KvmHost& host, VmKind kind);
  Status SetupMemory();
  Status SetupVcpu(const KvmHost& host);
  Status SetupStats();
  Result<std::map<std::string, uint64_t>> ReadStats();
  // Runs the vCPU until the guest writes to the sync port, handling every userspace exit on the way.
  Status RunToSync(uint64_t* userspace_exits);
  Error VcpuError(std::string tag, std::string what);

  int vm_fd_ = -1;
  int vcpu_fd_ = -1;
  int stats_fd_ = -1;
  int pio_eventfd_ = -1;
  int mmio_eventfd_ = -1;
  uint8_t* ram_ = nullptr;
  kvm_run* run_ = nullptr;
  size_t run_bytes_ = 0;
  uint64_t tsc_khz_ = 0;
  bool guest_debug_ = false;
  struct StatSlot {
    std::string name;
    uint64_t offset;  // into the stats fd
  };
  std::vector<StatSlot> stat_slots_;
};

}  // namespace exitscope::kvmbench
