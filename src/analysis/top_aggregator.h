// One interval of `exitscope top`: exits per VM, per vCPU thread and per reason, each counted when
// its kvm_exit happens (as bpf mode counts them: an exit still being handled shows at once), with
// the handling-time percentiles of the exits whose kvm_entry came in the interval (from the pairer);
// plus the interval's per-CPU losses. Rendered as a plain text table or as one JSON object per line
// by report/top_reporter.h.
// In: every kvm event via OnKvmEvent (before the pairer sees it), ExitSamples via OnExitSample, then
// TakeInterval. Out: TopInterval.
// Assumption: a vCPU thread's VM is its process, named by ProcVmDirectory (vm_grouper.h) from the
// VMM's command line; the directory is revalidated once per interval.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/exit_driver.h"
#include "analysis/exit_pairer.h"
#include "analysis/log_histogram.h"
#include "analysis/vm_grouper.h"
#include "decode/exit_reasons.h"

namespace exitscope {

struct TopRow {
  std::string label;  // reason name, "comm (pid)", or "tid N vcpu M"
  int32_t pid = -1, tid = -1, vcpu = -1;
  uint64_t exits = 0;  // kvm_exit in the interval
  double exits_per_s = 0;
  uint64_t timed = 0;  // exits whose handling ended in the interval: what the times below are of
  uint64_t p50_ns = 0, p90_ns = 0, p99_ns = 0, max_ns = 0;  // unknown when timed is 0
  uint64_t total_ns = 0;
};

struct TopInterval {
  uint64_t index = 0;
  double interval_s = 0;
  uint64_t exits = 0;
  double exits_per_s = 0;
  std::vector<TopRow> vms, vcpus, reasons;      // sorted by exits, descending
  std::vector<uint64_t> lost_per_cpu;           // events the kernel reported lost this interval
  std::map<std::string, uint64_t> diagnostics;  // non-zero pairer/decoder counters, cumulative
};

class TopAggregator : public ExitSampleSink, public KvmEventTap {
 public:
  // reason_filter: any spelling ReasonCodesFromName takes (HLT, hlt, npf …); empty = all.
  explicit TopAggregator(std::string reason_filter = {}, std::string proc_root = "/proc")
      : reason_filter_(std::move(reason_filter)),
        reason_codes_(ReasonCodesFromName(reason_filter_)),
        vms_dir_(std::move(proc_root)) {}
  void OnKvmEvent(const KvmEvent& e) override;      // counts a kvm_exit
  void OnExitSample(const ExitSample& s) override;  // times it, in the interval its entry came
  // Call while waiting for the next interval (ProcVmDirectory::ResolveRunningVms).
  void ResolveRunningVms() { vms_dir_.ResolveRunningVms(); }
  TopInterval TakeInterval(double interval_s, std::vector<uint64_t> lost_per_cpu, size_t max_rows);

 private:
  struct Acc {
    int32_t pid = -1, tid = -1, vcpu = -1;
    std::string label;
    uint64_t exits = 0;
    LogHistogram hist;
  };
  struct Cells {
    Acc *reason, *vm, *vcpu;
  };
  // The rows an exit of thread `tid` counts in; false when --reason leaves it out.
  bool CellsOf(Isa isa, uint32_t reason, int32_t tid, int32_t vcpu_id, Cells* out);
  std::string reason_filter_;
  ReasonCodes reason_codes_;
  std::map<std::string, Acc> reasons_;
  std::map<int32_t, Acc> vms_, vcpus_;
  ProcVmDirectory vms_dir_;
  uint64_t index_ = 0;
};

}  // namespace exitscope
