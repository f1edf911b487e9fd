// Turns the in-kernel counter's cumulative per-(process, thread, reason) sums into `top` intervals:
// the difference from the previous snapshot, grouped per reason, VM and vCPU as tracefs mode groups
// them (TopInterval, rendered by report/top_reporter.h), plus what only this mode has per reason
// (untimed exits, trips to the VMM). In: snapshots from BpfExitReader (or a test). Out: BpfInterval.
// Assumption: percentiles come from log2 buckets, so a p50 is the midpoint of a power-of-two range
// ([2^b, 2^(b+1)) ns): within one bucket of tracefs mode's exact-ish value, never finer.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <string>
#include <vector>

#include "analysis/top_aggregator.h"
#include "analysis/vm_grouper.h"
#include "decode/exit_reasons.h"
#include "observe/bpf_exit_abi.h"
#include "pipeline/live_page_decoder.h"

namespace exitscope {

// One map entry, its per-CPU values summed.
struct BpfExitEntry {
  exitscope_bpf_key key{};
  exitscope_bpf_stats stats{};
};

// kvm_exit's isa field as the map key holds it (KVM_ISA_*), kUnknown when absent.
Isa BpfKeyIsa(uint32_t field);
// A key's stats minus an earlier snapshot of the same key (counters only grow while loaded; a
// field that shrank counts from 0); vcpu_id1 is kept from `now`.
exitscope_bpf_stats BpfStatsMinus(const exitscope_bpf_stats& now, const exitscope_bpf_stats& before);

// Sums one key's per-CPU values (vcpu_id1 is the same on every CPU that saw it: the largest wins).
exitscope_bpf_stats SumPerCpu(std::span<const exitscope_bpf_stats> cpus);

// Midpoint of log2 bucket b (0 for bucket 0's [0, 2) ns); the percentile over the buckets (nearest
// rank, as LogHistogram::Percentile); 0 when empty.
uint64_t Log2BucketMid(uint32_t b);
uint64_t Log2Percentile(const __u64 (&hist)[EXITSCOPE_BPF_HIST_BUCKETS], double q);

struct BpfReasonExtra {
  uint64_t untimed = 0;    // exits with no kvm_entry yet (in flight at the snapshot, or never)
  uint64_t vmm_trips = 0;  // kvm_userspace_exit during the exit's handling
};

struct BpfInterval {
  TopInterval top;
  std::map<std::string, BpfReasonExtra> extra;  // by reason label
};

class BpfExitTable {
 public:
  explicit BpfExitTable(std::string reason_filter = {}, std::string proc_root = "/proc")
      : reason_filter_(std::move(reason_filter)),
        reason_codes_(ReasonCodesFromName(reason_filter_)),
        vms_dir_(std::move(proc_root)) {}
  // `snapshot` is cumulative; the interval is what grew since the previous call.
  BpfInterval TakeInterval(const std::vector<BpfExitEntry>& snapshot, double interval_s, size_t max_rows);
  // Call while waiting for the next interval (ProcVmDirectory::ResolveRunningVms).
  void ResolveRunningVms() { vms_dir_.ResolveRunningVms(); }

 private:
  std::string reason_filter_;
  ReasonCodes reason_codes_;
  ProcVmDirectory vms_dir_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, exitscope_bpf_stats> last_;
  uint64_t index_ = 0;
  Isa host_isa_ = HostIsa();  // for a kvm_exit without an isa field
};

// JSON (one line, the exitscope.top/1 object plus "mode": "bpf", "percentiles", and per reason
// "untimed" and "vmm_trips") and text (the tracefs table plus a line on what the mode sees).
std::string RenderBpfTopJson(const BpfInterval& t);
std::string RenderBpfTopText(const BpfInterval& t);

}  // namespace exitscope
