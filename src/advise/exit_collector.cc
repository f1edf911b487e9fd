#include "advise/exit_collector.h"

#include <algorithm>
#include <bit>

#include "advise/advisor.h"
#include "symbols/guest_symbolizer.h"

namespace exitscope {
namespace {

// include/trace/events/kvm.h: KVM_TRACE_MMIO_READ_UNSATISFIED 0, _READ 1, _WRITE 2.
constexpr uint32_t kKvmTraceMmioWrite = 2;

}  // namespace

ExitCollector::ExitCollector(const TraceMeta* meta, Diagnostics* diagnostics, std::span<const Rule> rules)
    : meta_(meta), diagnostics_(diagnostics), pairer_(*meta, diagnostics, this), vms_(*meta) {
  profile_.rules = rules.empty() ? AdviseRules() : rules;
  match_inline_ = profile_.rules.data() == AdviseRules().data() && profile_.rules.size() == AdviseRules().size() &&
                  MatchAdviseRulesInOrder();
  for (const Rule& r : profile_.rules) {
    profile_.matched.push_back(std::make_unique<MatchedExits>(&r.summary));
    profile_.matched.push_back(r.summary.vmm_dependent ? std::make_unique<MatchedExits>(&r.summary) : nullptr);
  }
  BuildFeeds(false);
}

void ExitCollector::BuildFeeds(bool vmm_known) {
  feeds_.clear();
  for (size_t i = 0; i < profile_.rules.size(); ++i) {
    const Rule& r = profile_.rules[i];
    // Once the trace has shown an event that records VMM trips it does for good: the summaries kept
    // for "not recorded" are dropped and no longer fed.
    if (vmm_known && r.summary.vmm_dependent) profile_.matched[2 * i].reset();
    for (int known = 0; known < 2; ++known) {
      if (MatchedExits* m = profile_.matched[2 * i + known].get())
        feeds_.push_back({r.match, m, known == 1, r.summary.Sequential(), static_cast<uint32_t>(i)});
    }
  }
  feeds_vmm_known_ = vmm_known;
  unknown_feed_by_rule_.assign(profile_.rules.size(), -1);
  sequential_unknown_feeds_.clear();
  known_feeds_.clear();
  for (uint32_t k = 0; k < feeds_.size(); ++k) {
    const Feed& f = feeds_[k];
    if (f.vmm_known) {
      known_feeds_.push_back(k);
      continue;
    }
    unknown_feed_by_rule_[f.rule] = static_cast<int32_t>(k);
    if (f.sequential) sequential_unknown_feeds_.push_back(k);
  }
}

ExitCollector::ThreadSlot& ExitCollector::Thread(int32_t tid, int32_t vcpu_id) {
  if (tid != last_tid_ || !last_slot_) {
    auto [it, fresh] = thread_slots_.try_emplace(tid);
    if (fresh) {
      auto [a, _] = profile_.threads.try_emplace(tid);
      a->second.index = static_cast<uint32_t>(profile_.threads.size() - 1);
      it->second.activity = &a->second;
      it->second.vm = vms_.VmId(tid);
      it->second.vcpu_id = vcpu_id;
      it->second.vcpu = vms_.VcpuIndex(tid, vcpu_id).value_or(vcpu_id);
    }
    last_tid_ = tid;
    last_slot_ = &it->second;
  }
  ThreadSlot& t = *last_slot_;
  if (vcpu_id != t.vcpu_id) {  // the identity as report --by vm / --vcpu read it (analysis/vm_grouper.h)
    t.vcpu_id = vcpu_id;
    t.vcpu = vms_.VcpuIndex(tid, vcpu_id).value_or(vcpu_id);
  }
  return t;
}

void ExitCollector::OnKvmEvent(const KvmEvent& e) {
  profile_.has_event[static_cast<int>(e.kind)] = true;
  if (profile_.first_ts_ns == 0 || e.ts_ns < profile_.first_ts_ns) profile_.first_ts_ns = e.ts_ns;
  if (e.ts_ns > profile_.last_ts_ns) profile_.last_ts_ns = e.ts_ns;
  // apic_ stays empty in a trace without kvm_apic: no hash of the tid per exit then.
  if (e.kind == EventKind::kExit) {
    if (auto it = apic_.empty() ? apic_.end() : apic_.find(e.tid); it != apic_.end()) it->second.seen = false;
  } else if (e.kind == EventKind::kApic) {
    apic_[e.tid] = ApicAccess{true, e.write, e.aux};
  }
}

namespace {

// What the detail events of an exit said (MSR, port, MMIO, fault, system register, WFx), into
// the advised exit.
void AddDetails(const ExitSample& s, AdvisedExit* x) {
  for (int i = 0; i < s.detail_count; ++i) {
    const ExitDetail& d = s.details[i];
    switch (d.kind) {
      case EventKind::kMsr:
        x->has_msr = true;
        x->msr = static_cast<uint32_t>(d.key);
        x->msr_write = d.write;
        break;
      case EventKind::kPio:
        x->has_pio = true;
        x->port = static_cast<uint32_t>(d.key);
        x->pio_write = d.write;
        break;
      case EventKind::kMmio:
        x->has_mmio = true;
        x->gpa = d.key;
        x->mmio_write = d.write || d.aux == kKvmTraceMmioWrite;
        break;
      case EventKind::kFastMmio:
        x->has_mmio = x->fast_mmio = x->mmio_write = true;
        x->gpa = d.key;
        break;
      case EventKind::kPageFault:
      case EventKind::kGuestFault:
        x->page_fault = true;
        x->fault_addr = d.key;
        break;
      case EventKind::kSysReg:
      case EventKind::kHandleSysReg:
        if (x->has_sysreg && d.kind == EventKind::kHandleSysReg) break;  // kvm_sys_access said it
        x->has_sysreg = true;
        x->sysreg = static_cast<uint32_t>(d.key);
        x->sysreg_write = d.write;
        break;
      case EventKind::kWfx: x->wfe = d.key != 0; break;
      default: break;
    }
  }
}

}  // namespace

void ExitCollector::Keep(const ExitSample& s, bool timed) {
  AdvisedExit x;
  x.ts_ns = s.ts_ns;
  x.timed = timed;
  x.dur_ns = timed ? s.dur_ns : 0;
  x.handling_ns = timed ? s.handling_ns() : 0;
  x.tid = s.tid;
  x.cpu = s.exit_cpu;
  x.isa = s.isa != Isa::kUnknown ? s.isa : meta_->isa_hint;
  x.reason = s.reason;
  x.exit_class = ClassifyExit(x.isa, s.reason);
  x.rip = s.rip;
  x.info1 = s.info1;
  x.info2 = s.info2;
  x.userspace = s.to_userspace;
  x.userspace_reason = s.userspace_reason;
  AddDetails(s, &x);
  if (auto it = apic_.empty() ? apic_.end() : apic_.find(s.tid); it != apic_.end() && it->second.seen) {
    x.has_apic = true;
    x.apic_write = it->second.write;
    x.apic_reg = it->second.reg;
  }
  const ThreadSlot& slot = Thread(s.tid, s.vcpu_id);
  x.vm = slot.vm;
  x.vcpu = slot.vcpu;
  ++profile_.exits;
  if (timed) {
    ++profile_.timed_exits;
    profile_.total_exit_ns += x.handling_ns;
    profile_.blocked_ns += x.dur_ns - x.handling_ns;
  }
  ThreadActivity& t = *slot.activity;
  if (t.exits++ == 0 || x.ts_ns < t.first_ts_ns) t.first_ts_ns = x.ts_ns;
  t.last_ts_ns = std::max(t.last_ts_ns, x.ts_ns + x.dur_ns);
  if (t.vcpu < 0) t.vcpu = x.vcpu;
  Fold(x, t.index);
}

// The exit goes into the trace-wide figures and into each rule's summary, then is dropped. Samples
// arrive in entry order across threads but in exit order within a thread (one open exit per thread in
// the pairer), which is the only order the rules' sequence state reads.
void ExitCollector::Fold(const AdvisedExit& x, uint32_t thread) {
  if (const uint32_t bit = 1u << static_cast<uint32_t>(x.isa); x.isa != Isa::kUnknown && !(isas_seen_ & bit)) {
    isas_seen_ |= bit;
    profile_.isas.insert(x.isa);
  }
  if (x.userspace) {
    ++profile_.vmm_exits;
    profile_.vmm_time_ns += x.handling_ns;
  }
  ExitProfile::ClassStats*& class_stats = class_stats_[static_cast<uint8_t>(x.exit_class)];
  if (!class_stats) class_stats = &profile_.classes[x.exit_class];
  ExitProfile::ClassStats& c = *class_stats;
  ++c.exits;
  c.time_ns += x.handling_ns;
  // A class's median prices host-noise's stretched exits; that rule never matches a HLT (a halted
  // vCPU's wait is no handling) and in_kernel leaves HLT out, so the most frequent class is spared.
  if (x.timed && x.exit_class != ExitClass::kHlt) (x.userspace ? c.vmm_part : c.kernel_part).Add(x.handling_ns);
  if (GuestSymbolizer::IsKernel(x.rip) && site_rips_.size() < ExitProfile::kSiteRipCap) {
    // Most exits repeat a site seen a moment ago: a small direct-mapped memo spares the set's hash.
    SiteMemo& memo = site_memo_[(x.rip ^ static_cast<uint64_t>(x.exit_class)) % site_memo_.size()];
    if (!memo.used || memo.rip != x.rip || memo.exit_class != x.exit_class) {
      site_rips_.insert({x.rip, x.exit_class});
      memo = SiteMemo{x.rip, x.exit_class, true};
    }
  }
  if (const bool vmm_known = profile_.VmmTripsRecorded(); vmm_known != feeds_vmm_known_) BuildFeeds(vmm_known);
  // A feed sees its matches, and a sequential one also the exits between them until it settles.
  auto feed = [&](const Feed& f, bool hit) {
    if (hit || (f.sequential && !f.matched->Unmoved(thread))) f.matched->Observe(x, thread, hit);
  };
  if (!match_inline_) {
    for (const Feed& f : feeds_) feed(f, f.match(x, MatchContext{f.vmm_known}));
    return;
  }
  // Every rule at once under "VMM trips not recorded": only the rules that matched, and the
  // sequential feeds, are visited (each feed's summary is its own, so the order among feeds is
  // free; each still sees the exits in order). The feeds kept under "recorded" (the vmm-dependent
  // rules) call their own match.
  const uint32_t bits = MatchAdviseRules(x, MatchContext{false});
  for (uint32_t b = bits; b; b &= b - 1) {
    if (const int32_t k = unknown_feed_by_rule_[static_cast<size_t>(std::countr_zero(b))]; k >= 0)
      feed(feeds_[static_cast<size_t>(k)], true);
  }
  for (uint32_t k : sequential_unknown_feeds_) {
    if (!((bits >> feeds_[k].rule) & 1)) feed(feeds_[k], false);
  }
  for (uint32_t k : known_feeds_) feed(feeds_[k], feeds_[k].match(x, MatchContext{true}));
}

ExitProfile ExitCollector::Finish() {
  pairer_.Finish();
  if (diagnostics_) MarkPartial(*diagnostics_, &profile_);
  for (auto& m : profile_.matched) {
    if (m) m->Finish();
  }
  for (auto& [cls, c] : profile_.classes) {
    c.handling.Merge(c.kernel_part);
    c.handling.Merge(c.vmm_part);
    profile_.in_kernel.Merge(c.kernel_part);
  }
  std::vector<std::pair<uint64_t, ExitClass>> sites(site_rips_.begin(), site_rips_.end());
  std::sort(sites.begin(), sites.end());  // by RIP, as the slide vote has always seen them
  profile_.site_rips.clear();
  for (const auto& [rip, cls] : sites) profile_.site_rips.push_back({rip, cls});
  return std::move(profile_);
}

size_t ExitProfile::RetainedEntries() const {
  size_t n = threads.size() + site_rips.size() + in_kernel.distinct() + isas.size();
  for (const auto& [c, s] : classes) n += 1 + s.handling.distinct() + s.kernel_part.distinct() + s.vmm_part.distinct();
  for (const auto& m : matched) n += m ? m->RetainedEntries() : 0;
  return n;
}

void MarkPartial(const Diagnostics& diagnostics, ExitProfile* profile) {
  profile->partial = diagnostics.HasDataLoss();
  profile->partial_counters.clear();
  for (const auto& c : diagnostics.NonZero()) {
    if (c.severity != Severity::kInfo) profile->partial_counters.push_back(c.name);
  }
}

ExitProfile CollectExits(KvmEventSource* source) {
  ExitCollector c(&source->meta(), &source->diagnostics());
  DriveOptions drive;
  drive.tap = &c;
  ExitRun run = DriveExits(*source, &c, &source->diagnostics(), drive);
  ExitProfile profile = c.Finish();  // its own pairer saw no event: only the profile is finished
  profile.run = run;
  return profile;
}

}  // namespace exitscope
