// Cumulative exit counters per VM for `exitscope serve` and `report --openmetrics`: exits and
// handling time per (domain, reason), split by stage (kernel, or a trip to the VMM), exits per
// (domain, vCPU index), a duration histogram per (domain, reason), and what each VM is.
// In: ExitSamples (timed and untimed) from the one pairer, a namer that says which VM and vCPU a
// host thread is; live (serve), every kvm event too, so that an exit counts when its kvm_exit
// happens (ExitCounting::kAtKvmExit: one still being handled, a VM's last, is counted at once).
// Out: ExitMetrics, read under the caller's lock by report/openmetrics_reporter.
// Assumptions: counters only grow (a VM keeps its series while it lives and for a grace period
// after); a VM is known by its domain name, so a VM restarted under the same name continues its
// series; labels are bounded (domain, reason, vCPU index, stage, never pid/tid/RIP/MSR/port).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "analysis/exit_driver.h"
#include "analysis/exit_pairer.h"

namespace exitscope {

// When an exit is counted: with its pair (a trace read whole, where every exit reaches the pairer's
// end) or at its kvm_exit (live, where the last exit of a VM never gets an entry).
enum class ExitCounting { kWhenPaired, kAtKvmExit };

struct ExitVmName {
  std::string domain, uuid, vmm;
  int32_t vcpu = -1;  // -1: not known
  bool alive = true;
};
// Which VM and vCPU host thread `tid` is (vcpu_id: kvm_exit/kvm_entry's, -1 when not recorded).
using VmNameFn = std::function<ExitVmName(int32_t tid, int32_t vcpu_id)>;

// Histogram bounds in seconds, on the facts of exit costs: ~0.5 us debug-register exits, 1-2 us
// in-kernel round trips (CPUID, MSR), tens of us trips to the VMM, ms for HLT (the vCPU waits).
inline constexpr std::array<double, 10> kExitDurationBuckets = {5e-7, 1e-6, 2e-6, 5e-6, 2e-5,
                                                                5e-5, 1e-4, 1e-3, 1e-2, 1e-1};

struct ReasonMetrics {
  uint64_t exits = 0;                                           // timed and untimed
  uint64_t kernel_ns = 0, vmm_ns = 0;                           // handling time (a halted vCPU's wait excluded)
  uint64_t timed = 0, timed_ns = 0;                             // the histogram's count and sum
  std::array<uint64_t, kExitDurationBuckets.size()> buckets{};  // per bound, not cumulative
};

struct DomainMetrics {
  std::string uuid, vmm;
  std::map<std::string, ReasonMetrics> reasons;  // by reason name
  std::map<int32_t, uint64_t> vcpu_exits;        // by vCPU index; -1: unknown
  uint64_t gone_since_ns = 0;                    // 0: alive
};

class ExitMetrics : public ExitSampleSink, public KvmEventTap {
 public:
  explicit ExitMetrics(VmNameFn namer, ExitCounting counting = ExitCounting::kWhenPaired)
      : namer_(std::move(namer)), at_kvm_exit_(counting == ExitCounting::kAtKvmExit) {}
  void OnKvmEvent(const KvmEvent& e) override;  // kAtKvmExit: counts a kvm_exit
  void OnExitSample(const ExitSample& s) override;
  void OnUntimedExit(const ExitSample& s) override;
  void OnLost(const LostEvents& lost);

  // Asks the namer again about every thread (after the caller revalidated what it names from).
  void ForgetThreads() { threads_.clear(); }
  // VMs whose process is gone: their series stay for `grace_ns` after `now_ns`, then go.
  // `alive`: the domains of VMs alive now.
  void Prune(const std::set<std::string>& alive, uint64_t now_ns, uint64_t grace_ns);

  const std::map<std::string, DomainMetrics>& domains() const { return domains_; }
  const std::map<int32_t, uint64_t>& lost_by_cpu() const { return lost_by_cpu_; }
  // Sets a CPU's lost count from the kernel's own per-CPU stats (live), never lowering it.
  void SetLost(int32_t cpu, uint64_t total);

 private:
  struct ThreadCell {
    DomainMetrics* domain = nullptr;
    uint64_t* vcpu_exits = nullptr;
    uint32_t last_code = UINT32_MAX;
    ReasonMetrics* last_reason = nullptr;
  };
  // The cell of an exit of thread `tid`; `count` also counts it for its vCPU.
  ReasonMetrics& Cell(int32_t tid, int32_t vcpu_id, Isa isa, uint32_t reason, bool count);
  VmNameFn namer_;
  bool at_kvm_exit_;
  std::map<std::string, DomainMetrics> domains_;  // std::map: pointers stay valid on insert
  std::unordered_map<int32_t, ThreadCell> threads_;
  std::map<int32_t, uint64_t> lost_by_cpu_;
};

}  // namespace exitscope
