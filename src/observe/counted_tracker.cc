#include "observe/counted_tracker.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <set>

namespace exitscope {
namespace {

void AddReason(Log2ReasonMetrics* r, const exitscope_bpf_stats& d) {
  r->exits += d.exits;
  r->timed += d.timed;
  r->timed_ns += d.total_ns;
  r->vmm_trips += d.userspace;
  for (size_t b = 0; b < kLog2Buckets; ++b) r->buckets[b] += d.hist[b];
}

// now - before of one counter, a shrink read as a restart (CounterDelta's rule).
uint64_t Grown(const std::map<std::string, uint64_t>& now, const std::map<std::string, uint64_t>* before,
               const std::string& name, bool* present) {
  auto n = now.find(name);
  *present = n != now.end();
  if (!*present) return 0;
  uint64_t old = 0;
  if (before) {
    if (auto b = before->find(name); b != before->end()) old = b->second;
  }
  return n->second >= old ? n->second - old : n->second;
}

void AddCounters(std::map<std::string, uint64_t>* into, const std::map<std::string, uint64_t>& now,
                 const std::map<std::string, uint64_t>* before) {
  static const std::set<std::string> kept(KvmExitCounterOrder().begin(), KvmExitCounterOrder().end());
  for (const std::string& name : kept) {
    bool present = false;
    uint64_t d = Grown(now, before, name, &present);
    if (present) (*into)[name] += d;
  }
}

}  // namespace

void BpfMetricsTracker::Add(const std::vector<BpfExitEntry>& snapshot, Log2ExitMetrics* m) {
  for (const BpfExitEntry& e : snapshot) {
    auto id = std::make_tuple(e.key.tgid, e.key.tid, e.key.reason, e.key.isa);
    exitscope_bpf_stats d = e.stats;
    if (auto it = last_.find(id); it != last_.end()) d = BpfStatsMinus(e.stats, it->second);
    last_[id] = e.stats;
    if (d.exits == 0 && d.timed == 0 && d.userspace == 0) continue;
    auto [name, fresh] = names_.try_emplace(e.key.tid);
    if (fresh) {
      const int32_t vcpu_id = d.vcpu_id1 ? static_cast<int32_t>(d.vcpu_id1 - 1) : -1;
      name->second = namer_(static_cast<int32_t>(e.key.tid), vcpu_id);
    }
    const ExitVmName& n = name->second;
    Log2DomainMetrics& dom = m->domains[n.domain];
    if (!n.uuid.empty()) dom.uuid = n.uuid;
    if (!n.vmm.empty()) dom.vmm = n.vmm;
    dom.gone_since_ns = 0;
    Isa isa = BpfKeyIsa(e.key.isa);
    if (isa == Isa::kUnknown) isa = host_isa_;
    AddReason(&dom.reasons[ExitReasonName(isa, e.key.reason)], d);
    dom.vcpu_exits[n.vcpu] += d.exits;
  }
}

void KvmStatTracker::Add(const std::vector<KvmVmCounters>& now, KvmStatMetrics* m) {
  std::set<std::pair<int, int>> seen;
  for (const KvmVmCounters& vm : now) {
    const auto id = std::make_pair(vm.pid, vm.vm_fd);
    auto last = last_.find(id);
    const KvmVmCounters* before = last == last_.end() ? nullptr : &last->second;
    auto [name, fresh] = names_.try_emplace(id);
    if (fresh) name->second = namer_(vm.pid, -1);
    KvmStatDomain& dom = m->domains[name->second.domain];
    if (!name->second.uuid.empty()) dom.uuid = name->second.uuid;
    if (!name->second.vmm.empty()) dom.vmm = name->second.vmm;
    dom.source = vm.source;
    dom.gone_since_ns = 0;
    AddCounters(&dom.counters, vm.counters, before ? &before->counters : nullptr);
    for (const auto& [index, counters] : vm.vcpus) {
      const std::map<std::string, uint64_t>* vb = nullptr;
      if (before) {
        if (auto v = before->vcpus.find(index); v != before->vcpus.end()) vb = &v->second;
      }
      AddCounters(&dom.vcpus[index], counters, vb);
    }
    seen.insert(id);
    last_[id] = vm;
  }
  // A VM missing from this read is forgotten once its process is gone (a pid reused later is a new
  // VM); while the process runs its last values stay: a shrink on its next read is a restart.
  for (auto it = last_.begin(); it != last_.end();) {
    if (seen.count(it->first) || Alive(it->first.first)) {
      ++it;
      continue;
    }
    names_.erase(it->first);
    it = last_.erase(it);
  }
}

bool KvmStatTracker::Alive(int pid) const {
  if (alive_) return alive_(pid);
  return ::kill(pid, 0) == 0 || errno != ESRCH;
}

}  // namespace exitscope
