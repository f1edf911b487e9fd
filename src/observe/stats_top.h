// `top --mode stats`: per VM, how much each of KVM's own counters grew over the interval
// (observe/kvm_stats_fd.h where the VM's fds can be reached, with per-vCPU exits; else
// observe/kvm_debugfs_stats.h), as a table or one JSON object per line (schema
// exitscope.top-stats/1). No tracing at all, so no added cost per exit, but coarse: KVM counts
// exits by a few kinds (halt, I/O, MMIO, interrupt …), with no per-reason split and no handling time.
// In: successive ReadKvmStats results. Out: StatsInterval, rendered.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/vm_grouper.h"
#include "observe/kvm_debugfs_stats.h"

namespace exitscope {

struct StatsVmRow {
  std::string label;  // "domain (pid)"
  int pid = 0, vm_fd = 0;
  std::vector<std::pair<std::string, uint64_t>> deltas;  // KvmExitCounterOrder() first, then by name
  std::string source;                                    // "stats-fd" or "debugfs"
  std::map<int, uint64_t> vcpu_exits;                    // "exits" grown per vCPU (stats-fd only)
};

struct StatsInterval {
  uint64_t index = 0;
  double interval_s = 0;
  std::vector<StatsVmRow> vms;  // by exits grown, descending
};

class StatsTopTable {
 public:
  explicit StatsTopTable(int pid_filter = 0, std::string proc_root = "/proc")
      : pid_filter_(pid_filter), vms_dir_(std::move(proc_root)) {}
  // The first call sets the baseline: its interval shows what grew since the VM started.
  StatsInterval TakeInterval(const std::vector<KvmVmCounters>& now, double interval_s);

 private:
  int pid_filter_;
  ProcVmDirectory vms_dir_;
  std::map<std::pair<int, int>, KvmVmCounters> last_;
  uint64_t index_ = 0;
};

std::string RenderStatsTopJson(const StatsInterval& t);  // one line
std::string RenderStatsTopText(const StatsInterval& t, size_t max_counters);

}  // namespace exitscope
