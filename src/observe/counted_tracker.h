// Feeds `serve --mode bpf` and `serve --mode stats`: each read of the in-kernel counter's map
// (observe/bpf_exit_reader) or of KVM's counters (observe/kvm_stats_fd) is turned into what grew
// since the previous read, named per VM and vCPU as tracefs mode names them (the caller's
// VmNameFn), and added to the cumulative series (analysis/counted_metrics.h).
// In: snapshots, cumulative since load or since the VM started. Out: Log2ExitMetrics / KvmStatMetrics.
// Assumption: a thread or VM is named when it is first seen growing and the name is kept until
// ForgetThreads, so a VM whose process ended keeps its domain for what it counted before.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "analysis/counted_metrics.h"
#include "analysis/exit_metrics.h"
#include "decode/exit_reasons.h"
#include "observe/bpf_exit_table.h"
#include "observe/kvm_debugfs_stats.h"

namespace exitscope {

static_assert(kLog2Buckets == EXITSCOPE_BPF_HIST_BUCKETS, "the series keep the kernel program's buckets");

class BpfMetricsTracker {
 public:
  explicit BpfMetricsTracker(VmNameFn namer) : namer_(std::move(namer)) {}
  void Add(const std::vector<BpfExitEntry>& snapshot, Log2ExitMetrics* m);
  void ForgetThreads() { names_.clear(); }

 private:
  VmNameFn namer_;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t, uint32_t>, exitscope_bpf_stats> last_;
  std::unordered_map<uint32_t, ExitVmName> names_;  // by tid
  Isa host_isa_ = HostIsa();                        // for a kvm_exit without an isa field
};

// Only KVM's exit-related cumulative counters are kept (KvmExitCounterOrder): debugfs also holds
// gauges, whose differences would mean nothing. A VM missing from one read (closing, or skipped)
// keeps its last values while its process lives, so a later read of it adds only what grew.
class KvmStatTracker {
 public:
  explicit KvmStatTracker(VmNameFn namer) : namer_(std::move(namer)) {}
  // `alive(pid)`: whether the process still runs (the default asks the kernel).
  void Add(const std::vector<KvmVmCounters>& now, KvmStatMetrics* m);
  void set_alive(std::function<bool(int)> alive) { alive_ = std::move(alive); }

 private:
  VmNameFn namer_;
  std::function<bool(int)> alive_;
  std::map<std::pair<int, int>, KvmVmCounters> last_;
  std::map<std::pair<int, int>, ExitVmName> names_;
  bool Alive(int pid) const;
};

}  // namespace exitscope
