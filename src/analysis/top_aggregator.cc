#include "analysis/top_aggregator.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>

#include "decode/exit_reasons.h"

namespace exitscope {
namespace {

std::string ReadLine(const std::string& path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

TopRow RowOf(const std::string& label, int32_t pid, int32_t tid, int32_t vcpu,
             const LogHistogram& h, double interval_s) {
  TopRow r;
  r.label = label;
  r.pid = pid;
  r.tid = tid;
  r.vcpu = vcpu;
  r.exits = h.count();
  r.exits_per_s = interval_s > 0 ? h.count() / interval_s : 0;
  r.p50_ns = h.Percentile(0.5);
  r.p90_ns = h.Percentile(0.9);
  r.p99_ns = h.Percentile(0.99);
  r.max_ns = h.max();
  r.total_ns = h.sum();
  return r;
}

void SortRows(std::vector<TopRow>* rows, size_t max_rows) {
  std::sort(rows->begin(), rows->end(), [](const TopRow& a, const TopRow& b) {
    return a.exits != b.exits ? a.exits > b.exits : a.label < b.label;
  });
  if (max_rows && rows->size() > max_rows) rows->resize(max_rows);
}

}  // namespace

int32_t TopAggregator::VmOf(int32_t tid) {
  auto it = tgid_cache_.find(tid);
  if (it != tgid_cache_.end()) return it->second;
  int32_t tgid = tid;
  std::ifstream in("/proc/" + std::to_string(tid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Tgid:", 0) == 0) {
      tgid = std::atoi(line.c_str() + 5);
      break;
    }
  }
  tgid_cache_[tid] = tgid;
  return tgid;
}

void TopAggregator::OnExitSample(const ExitSample& s) {
  if (!reason_filter_.empty() && !reason_codes_.Matches(s.isa, s.reason)) return;
  std::string reason = ExitReasonName(s.isa, s.reason);
  Acc& r = reasons_[reason];
  r.label = reason;
  r.hist.Add(s.dur_ns);
  int32_t pid = VmOf(s.tid);
  Acc& vm = vms_[pid];
  if (vm.label.empty()) {
    std::string comm = ReadLine("/proc/" + std::to_string(pid) + "/comm");
    vm.label = fmt::format("{} ({})", comm.empty() ? "?" : comm, pid);
    vm.pid = pid;
  }
  vm.hist.Add(s.dur_ns);
  Acc& v = vcpus_[s.tid];
  v.pid = pid;
  v.tid = s.tid;
  v.vcpu = s.vcpu_id;
  v.label = s.vcpu_id >= 0 ? fmt::format("vcpu {} (tid {})", s.vcpu_id, s.tid)
                           : fmt::format("tid {}", s.tid);
  v.hist.Add(s.dur_ns);
}

TopInterval TopAggregator::TakeInterval(double interval_s, std::vector<uint64_t> lost_per_cpu,
                                        size_t max_rows) {
  TopInterval t;
  t.index = ++index_;
  t.interval_s = interval_s;
  t.lost_per_cpu = std::move(lost_per_cpu);
  for (const auto& [k, a] : reasons_) {
    t.reasons.push_back(RowOf(a.label, -1, -1, -1, a.hist, interval_s));
    t.exits += a.hist.count();
  }
  for (const auto& [k, a] : vms_) t.vms.push_back(RowOf(a.label, a.pid, -1, -1, a.hist, interval_s));
  for (const auto& [k, a] : vcpus_) {
    t.vcpus.push_back(RowOf(a.label, a.pid, a.tid, a.vcpu, a.hist, interval_s));
  }
  t.exits_per_s = interval_s > 0 ? t.exits / interval_s : 0;
  SortRows(&t.reasons, max_rows);
  SortRows(&t.vms, max_rows);
  SortRows(&t.vcpus, max_rows);
  reasons_.clear();
  vms_.clear();
  vcpus_.clear();
  return t;
}

}  // namespace exitscope
