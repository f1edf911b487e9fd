#include "analysis/top_aggregator.h"

#include <fmt/format.h>

#include <algorithm>

#include "decode/exit_reasons.h"

namespace exitscope {
namespace {

TopRow RowOf(const std::string& label, int32_t pid, int32_t tid, int32_t vcpu, uint64_t exits, const LogHistogram& h,
             double interval_s) {
  TopRow r;
  r.label = label;
  r.pid = pid;
  r.tid = tid;
  r.vcpu = vcpu;
  r.exits = exits;
  r.exits_per_s = interval_s > 0 ? exits / interval_s : 0;
  r.timed = h.count();
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

bool TopAggregator::CellsOf(Isa isa, uint32_t reason_code, int32_t tid, int32_t vcpu_id, Cells* out) {
  if (!reason_filter_.empty() && !reason_codes_.Matches(isa, reason_code)) return false;
  std::string reason = ExitReasonName(isa, reason_code);
  Acc& r = reasons_[reason];
  r.label = reason;
  const LiveVm& live = vms_dir_.VmOf(tid);
  const int32_t pid = live.pid;
  Acc& vm = vms_[pid];
  if (vm.label.empty()) {
    vm.label = fmt::format("{} ({})", live.domain, pid);
    vm.pid = pid;
  }
  Acc& v = vcpus_[tid];
  if (v.label.empty()) {
    std::optional<int32_t> vcpu = vms_dir_.VcpuOf(tid, vcpu_id);
    v.pid = pid;
    v.tid = tid;
    v.vcpu = vcpu.value_or(-1);
    v.label =
        vcpu ? fmt::format("{} vcpu {} (tid {})", live.domain, *vcpu, tid) : fmt::format("{} tid {}", live.domain, tid);
  }
  *out = {&r, &vm, &v};
  return true;
}

void TopAggregator::OnKvmEvent(const KvmEvent& e) {
  Cells c;
  if (e.kind != EventKind::kExit || !CellsOf(e.isa, e.reason, e.tid, e.vcpu_id, &c)) return;
  ++c.reason->exits;
  ++c.vm->exits;
  ++c.vcpu->exits;
}

void TopAggregator::OnExitSample(const ExitSample& s) {
  Cells c;
  if (!CellsOf(s.isa, s.reason, s.tid, s.vcpu_id, &c)) return;
  c.reason->hist.Add(s.dur_ns);
  c.vm->hist.Add(s.dur_ns);
  c.vcpu->hist.Add(s.dur_ns);
}

TopInterval TopAggregator::TakeInterval(double interval_s, std::vector<uint64_t> lost_per_cpu, size_t max_rows) {
  TopInterval t;
  t.index = ++index_;
  t.interval_s = interval_s;
  t.lost_per_cpu = std::move(lost_per_cpu);
  for (const auto& [k, a] : reasons_) {
    t.reasons.push_back(RowOf(a.label, -1, -1, -1, a.exits, a.hist, interval_s));
    t.exits += a.exits;
  }
  for (const auto& [k, a] : vms_) t.vms.push_back(RowOf(a.label, a.pid, -1, -1, a.exits, a.hist, interval_s));
  for (const auto& [k, a] : vcpus_) {
    t.vcpus.push_back(RowOf(a.label, a.pid, a.tid, a.vcpu, a.exits, a.hist, interval_s));
  }
  t.exits_per_s = interval_s > 0 ? t.exits / interval_s : 0;
  SortRows(&t.reasons, max_rows);
  SortRows(&t.vms, max_rows);
  SortRows(&t.vcpus, max_rows);
  reasons_.clear();
  vms_.clear();
  vcpus_.clear();
  vms_dir_.Revalidate();
  return t;
}

}  // namespace exitscope
