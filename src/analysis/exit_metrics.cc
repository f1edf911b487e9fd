#include "analysis/exit_metrics.h"

#include <algorithm>

#include "decode/exit_reasons.h"

namespace exitscope {

ReasonMetrics& ExitMetrics::Cell(int32_t tid, int32_t vcpu_id, Isa isa, uint32_t reason, bool count) {
  auto [it, fresh] = threads_.try_emplace(tid);
  ThreadCell& t = it->second;
  if (fresh || !t.domain) {
    ExitVmName n = namer_(tid, vcpu_id);
    DomainMetrics& d = domains_[n.domain];
    if (!n.uuid.empty()) d.uuid = n.uuid;
    if (!n.vmm.empty()) d.vmm = n.vmm;
    d.gone_since_ns = 0;
    t.domain = &d;
    t.vcpu_exits = &d.vcpu_exits[n.vcpu];
    t.last_code = UINT32_MAX;
  }
  // A vCPU thread exits for few reasons in a row: remember the last one's cell.
  if (t.last_code != reason || !t.last_reason) {
    t.last_reason = &t.domain->reasons[ExitReasonName(isa, reason)];
    t.last_code = reason;
  }
  if (count) ++*t.vcpu_exits;
  return *t.last_reason;
}

void ExitMetrics::OnKvmEvent(const KvmEvent& e) {
  if (at_kvm_exit_ && e.kind == EventKind::kExit) Cell(e.tid, e.vcpu_id, e.isa, e.reason, true).exits++;
}

void ExitMetrics::OnExitSample(const ExitSample& s) {
  ReasonMetrics& r = Cell(s.tid, s.vcpu_id, s.isa, s.reason, !at_kvm_exit_);
  const uint64_t ns = s.handling_ns();
  if (!at_kvm_exit_) r.exits++;
  (s.to_userspace ? r.vmm_ns : r.kernel_ns) += ns;
  r.timed++;
  r.timed_ns += ns;
  const double sec = ns / 1e9;
  auto b = std::lower_bound(kExitDurationBuckets.begin(), kExitDurationBuckets.end(), sec);
  if (b != kExitDurationBuckets.end()) r.buckets[b - kExitDurationBuckets.begin()]++;
}

void ExitMetrics::OnUntimedExit(const ExitSample& s) {
  if (!at_kvm_exit_) Cell(s.tid, s.vcpu_id, s.isa, s.reason, true).exits++;
}

void ExitMetrics::OnLost(const LostEvents& lost) {
  if (lost.cpu >= 0) lost_by_cpu_[lost.cpu] += lost.count;
}

void ExitMetrics::SetLost(int32_t cpu, uint64_t total) {
  uint64_t& v = lost_by_cpu_[cpu];
  v = std::max(v, total);
}

void ExitMetrics::Prune(const std::set<std::string>& alive, uint64_t now_ns, uint64_t grace_ns) {
  bool erased = false;
  for (auto it = domains_.begin(); it != domains_.end();) {
    DomainMetrics& d = it->second;
    if (alive.count(it->first)) {
      d.gone_since_ns = 0;
    } else if (d.gone_since_ns == 0) {
      d.gone_since_ns = now_ns;
    } else if (now_ns - d.gone_since_ns >= grace_ns) {
      it = domains_.erase(it);
      erased = true;
      continue;
    }
    ++it;
  }
  if (erased) threads_.clear();  // cells may point into an erased domain
}

}  // namespace exitscope
