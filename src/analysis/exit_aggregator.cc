#include "analysis/exit_aggregator.h"

#include <algorithm>
#include <fmt/format.h>

#include "decode/arm64_names.h"
#include "decode/exit_reason_codes.h"
#include "decode/exit_qualification.h"
#include "decode/exit_reasons.h"
#include "decode/msr_names.h"

namespace exitscope {
namespace {

constexpr uint64_t kOtherKey = UINT64_MAX;  // detail row summing keys past the per-kind cap

DurationStats StatsOf(const LogHistogram& h) {
  DurationStats d;
  d.count = h.count();
  d.total_ns = h.sum();
  d.min_ns = h.min();
  d.max_ns = h.max();
  d.mean_ns = h.mean();
  d.p50_ns = h.Percentile(0.50);
  d.p90_ns = h.Percentile(0.90);
  d.p99_ns = h.Percentile(0.99);
  d.p999_ns = h.Percentile(0.999);
  return d;
}

std::vector<HistogramBin> BinsOf(const LogHistogram& h) {
  std::vector<HistogramBin> bins;
  h.ForEachBucket([&](uint32_t b, uint64_t n) {
    bins.push_back(HistogramBin{LogHistogram::BucketLow(b), LogHistogram::BucketHigh(b), n});
  });
  return bins;
}

bool Broken(EventKind k) {
  switch (k) {
    case EventKind::kMsr:
    case EventKind::kPio:
    case EventKind::kMmio:
    case EventKind::kFastMmio:
    case EventKind::kCr:
    case EventKind::kHypercall:
    case EventKind::kUserspaceExit:
    case EventKind::kSysReg:
    case EventKind::kHandleSysReg:
    case EventKind::kHvcArm64:
    case EventKind::kWfx:
    case EventKind::kGuestFault: return true;
    default: return false;
  }
}

std::string_view DetailKindName(EventKind k) {
  switch (k) {
    case EventKind::kMsr: return "msr";
    case EventKind::kPio: return "pio";
    case EventKind::kMmio: return "mmio";
    case EventKind::kFastMmio: return "fast_mmio";
    case EventKind::kCr: return "cr";
    case EventKind::kHypercall: return "hypercall";
    case EventKind::kUserspaceExit: return "userspace";
    case EventKind::kSysReg: return "sysreg";
    case EventKind::kHvcArm64: return "hvc";
    case EventKind::kWfx: return "wfx";
    case EventKind::kGuestFault: return "guest_fault";
    default: return "other";
  }
}

}  // namespace

std::string_view GroupByName(GroupBy by) {
  switch (by) {
    case GroupBy::kReason: return "reason";
    case GroupBy::kVm: return "vm";
    case GroupBy::kVcpu: return "vcpu";
    case GroupBy::kCpu: return "cpu";
  }
  return "?";
}

ExitAggregator::ExitAggregator(const TraceMeta& meta, const ReportOptions& options)
    : meta_(meta), options_(options), vms_(meta) {
  if (options_.reason) reason_codes_ = ReasonCodesFromName(*options_.reason);
  for (const auto& g : meta_.guests) {
    for (const auto& [vcpu, tid] : g.vcpu_to_host_tid) vcpu_by_tid_[tid] = vcpu;
  }
}

ExitAggregator::~ExitAggregator() = default;

bool ExitAggregator::Accept(const ExitSample& s) const {
  if (options_.vcpu && s.vcpu_id != *options_.vcpu) {
    auto v = vcpu_by_tid_.find(s.tid);
    if (s.vcpu_id >= 0 || v == vcpu_by_tid_.end() || v->second != *options_.vcpu) return false;
  }
  if (options_.reason && !reason_codes_.Matches(s.isa, s.reason)) return false;
  if (options_.from_s || options_.to_s) {
    double t_s = static_cast<double>(s.ts_ns - std::min(s.ts_ns, origin_ns_)) * 1e-9;
    if (options_.from_s && t_s < *options_.from_s) return false;
    if (options_.to_s && t_s >= *options_.to_s) return false;
  }
  return true;
}

int64_t ExitAggregator::GroupId(const ExitSample& s) {
  switch (options_.by) {
    case GroupBy::kReason: return 0;
    case GroupBy::kVm: return vms_.VmId(s.tid);
    case GroupBy::kVcpu: return s.tid;
    case GroupBy::kCpu: return s.exit_cpu;
  }
  return 0;
}

ExitAggregator::ReasonStats* ExitAggregator::Cell(const ExitSample& s) {
  if (s.tid != last_tid_seen_) {
    tids_seen_[s.tid] = true;
    last_tid_seen_ = s.tid;
  }
  if (options_.pid && s.tid != *options_.pid && vms_.VmId(s.tid) != *options_.pid) {
    ++filtered_out_;
    return nullptr;
  }
  if ((options_.vcpu || options_.reason || options_.from_s || options_.to_s) && !Accept(s)) {
    ++filtered_out_;
    return nullptr;
  }
  if (s.tid != last_tid_reported_) {
    tids_reported_[s.tid] = true;
    last_tid_reported_ = s.tid;
  }
  // A thread's vCPU index rarely changes: the map is written only when it does, not on every exit.
  if (s.vcpu_id >= 0 && (s.tid != last_vcpu_tid_ || s.vcpu_id != last_vcpu_)) {
    vcpu_by_tid_[s.tid] = s.vcpu_id;
    last_vcpu_tid_ = s.tid;
    last_vcpu_ = s.vcpu_id;
  }
  int64_t gid = GroupId(s);
  uint64_t rkey = (static_cast<uint64_t>(s.isa) << 32) | s.reason;
  if (gid != cached_group_id_ || !cached_group_) {
    cached_group_ = &groups_[gid];
    cached_group_id_ = gid;
    cached_reason_ = nullptr;
  }
  if (rkey != cached_reason_key_ || !cached_reason_) {
    cached_reason_ = &cached_group_->reasons[rkey];
    cached_reason_key_ = rkey;
  }
  return cached_reason_;
}

void ExitAggregator::OnExitSample(const ExitSample& s) {
  ReasonStats* r = Cell(s);
  if (!r) return;
  // Totals, %TIME and the percentiles are handling time; a halted vCPU's wait is kept apart.
  const uint64_t ns = s.handling_ns();
  cached_group_->total.Add(ns);
  r->hist.Add(ns);
  cached_group_->blocked_ns += s.blocked_ns;
  r->blocked_ns += s.blocked_ns;
  if (s.to_userspace) {
    cached_group_->user_count++;
    cached_group_->user_ns += ns;
    r->user_count++;
    r->user_ns += ns;
  }
  if (options_.details) AddDetails(s, true);
  for (ExitSampleSink* k : accepted_) k->OnExitSample(s);
}

void ExitAggregator::OnUntimedExit(const ExitSample& s) {
  ReasonStats* r = Cell(s);
  if (!r) return;
  cached_group_->untimed++;
  r->untimed++;
  if (options_.details) AddDetails(s, false);
  for (ExitSampleSink* k : accepted_) k->OnUntimedExit(s);
}

ExitAggregator::DetailStats* ExitAggregator::FindDetail(DetailKey k) {
  auto it = details_.find(k);
  if (it == details_.end()) {
    size_t& n = detail_keys_per_kind_[k.kind];
    DetailKey stored = k;
    if (n >= kMaxDetailKeysPerKind) {
      stored = DetailKey{k.kind, 0, 0, kOtherKey};
    } else {
      ++n;
    }
    it = details_.try_emplace(stored).first;
  }
  return &it->second;
}

// Inline in AddDetails: a few hundred thousand calls per million events, nearly all cache hits.
[[gnu::always_inline]] inline void ExitAggregator::CountDetail(DetailKey k, uint64_t dur_ns, bool failed, bool timed) {
  size_t h = ((k.key * 0x9e3779b97f4a7c15ull) >> 40) ^ (k.kind * 7u) ^ (k.access * 13u) ^ k.size;
  DetailSlot& slot = detail_cache_[h % detail_cache_.size()];
  DetailStats* st = slot.stats;
  if (!st || !(slot.key == k)) [[unlikely]] {
    st = FindDetail(k);
    slot = DetailSlot{k, st};
  }
  st->count++;
  st->exit_ns += dur_ns;
  if (failed) st->failed++;
  if (options_.histograms && timed) {
    if (!st->hist) st->hist = std::make_unique<LogHistogram>();
    st->hist->Add(dur_ns);
  }
}

void ExitAggregator::AddDetails(const ExitSample& s, bool timed) {
  // Detail events of an untimed exit may be partial; what the exit itself carries is not.
  // arm64: kvm_sys_access names the trapped register; kvm_handle_sys_reg's ESR only where it is absent.
  auto sys_access = [&s] {
    for (int i = 0; i < s.detail_count; ++i) {
      if (s.details[i].kind == EventKind::kSysReg) return true;
    }
    return false;
  };
  for (int i = 0; timed && i < s.detail_count; ++i) {
    const ExitDetail& d = s.details[i];
    if (!Broken(d.kind)) continue;
    if (d.kind == EventKind::kHandleSysReg && sys_access()) continue;
    DetailKey k{static_cast<uint8_t>(d.kind), 0, 0, d.key};
    switch (d.kind) {
      case EventKind::kSysReg:
      case EventKind::kHandleSysReg:
        k.kind = static_cast<uint8_t>(EventKind::kSysReg);
        k.access = d.write;
        break;
      case EventKind::kHvcArm64: k.size = d.aux; break;  // the immediate
      case EventKind::kGuestFault: k.access = static_cast<uint8_t>(d.aux); break;
      case EventKind::kMsr:
      case EventKind::kCr:
        k.access = d.write;
        k.size = d.kind == EventKind::kCr ? d.size : 0;
        break;
      case EventKind::kPio:
        k.access = d.write;
        k.size = d.size;
        break;
      case EventKind::kMmio:
        k.access = static_cast<uint8_t>(d.aux);
        k.size = d.size;
        break;
      default: break;
    }
    if (d.kind == EventKind::kCr) k.key = d.size;  // kvm_cr: the register number is the key
    CountDetail(k, s.handling_ns(), d.failed, timed);
  }
  QualDetail q[kMaxQualDetails];
  for (int i = 0, n = DecodeQualification(s, q); i < n; ++i) {
    CountDetail(DetailKey{static_cast<uint8_t>(q[i].kind), q[i].access, q[i].size, q[i].key}, s.handling_ns(), false,
                timed);
  }
}

std::string ExitAggregator::GroupLabel(GroupBy by, int64_t id, const TidsByVm& tids_by_vm) const {
  auto comm_of = [&](int64_t tid) -> std::string {
    auto c = meta_.comm_by_tid.find(static_cast<int32_t>(tid));
    return c == meta_.comm_by_tid.end() ? std::string() : c->second;
  };
  switch (by) {
    case GroupBy::kReason: return "all exits";
    case GroupBy::kCpu: return fmt::format("CPU {}", id);
    case GroupBy::kVcpu: {
      std::string label = fmt::format("tid {}", id);
      if (auto c = comm_of(id); !c.empty()) label += " " + c;
      if (auto v = vcpu_by_tid_.find(static_cast<int32_t>(id)); v != vcpu_by_tid_.end())
        label += fmt::format(" (vcpu {})", v->second);
      return label;
    }
    case GroupBy::kVm: {
      static const std::vector<int32_t> kNone;
      auto it = tids_by_vm.find(id);
      return vms_.Label(id, it == tids_by_vm.end() ? kNone : it->second);
    }
  }
  return {};
}

ReasonRow ExitAggregator::MakeReasonRow(uint64_t rkey, const ReasonStats& r, const GroupReport& gr) const {
  ReasonRow row;
  row.isa = static_cast<Isa>(rkey >> 32);
  row.code = static_cast<uint32_t>(rkey);
  row.name = ExitReasonName(row.isa, row.code);
  row.stats = StatsOf(r.hist);
  row.count = row.stats.count + r.untimed;
  row.pct_count = gr.count ? 100.0 * row.count / gr.count : 0;
  row.pct_time = gr.total.total_ns ? 100.0 * row.stats.total_ns / gr.total.total_ns : 0;
  row.userspace_count = r.user_count;
  row.userspace_ns = r.user_ns;
  row.blocked_ns = r.blocked_ns;
  if (options_.histograms) row.histogram = BinsOf(r.hist);
  return row;
}

GroupReport ExitAggregator::MakeGroup(int64_t gid, const GroupStats& g, const TidsByVm& tids_by_vm) const {
  GroupReport gr;
  gr.kind = options_.by == GroupBy::kReason ? "all" : std::string(GroupByName(options_.by));
  gr.id = gid;
  gr.label = GroupLabel(options_.by, gid, tids_by_vm);
  gr.total = StatsOf(g.total);
  gr.count = gr.total.count + g.untimed;
  gr.userspace_count = g.user_count;
  gr.userspace_ns = g.user_ns;
  gr.blocked_ns = g.blocked_ns;
  for (const auto& [rkey, r] : g.reasons) {
    gr.reasons.push_back(MakeReasonRow(rkey, r, gr));
  }
  // Most exits first (perf kvm stat's default order); ties by time, then name for stable output.
  std::sort(gr.reasons.begin(), gr.reasons.end(), [](const ReasonRow& a, const ReasonRow& b) {
    if (a.count != b.count) return a.count > b.count;
    if (a.stats.total_ns != b.stats.total_ns) return a.stats.total_ns > b.stats.total_ns;
    return a.name < b.name;
  });
  if (options_.top > 0 && gr.reasons.size() > static_cast<size_t>(options_.top)) {
    gr.reasons_hidden = gr.reasons.size() - options_.top;
    gr.reasons.resize(options_.top);
  }
  return gr;
}

namespace {

// The name and access of a detail event's key (MSR, port, CR, hypercall, system register …).
void NameEventDetail(EventKind kind, uint8_t access, uint32_t size, uint64_t key, DetailRow* row) {
  switch (kind) {
    case EventKind::kMsr:
      row->name = MsrName(static_cast<uint32_t>(key));
      row->access = access ? "write" : "read";
      break;
    case EventKind::kPio:
      row->name = IoPortName(static_cast<uint32_t>(key));
      row->access = access ? "out" : "in";
      break;
    case EventKind::kMmio: row->access = std::string(MmioTypeName(access)); break;
    case EventKind::kCr:
      row->name = CrName(static_cast<uint32_t>(key));
      row->access = access ? "write" : "read";
      break;
    case EventKind::kHypercall: row->name = std::string(HypercallName(key)); break;
    case EventKind::kUserspaceExit: row->name = KvmExitName(static_cast<uint32_t>(key)); break;
    case EventKind::kSysReg: {
      const auto enc = static_cast<uint32_t>(key);
      row->name = Arm64SysRegName(enc);
      if (row->name.empty()) row->name = Arm64SysRegGenericName(enc);
      row->key_text = Arm64SysRegTuple(enc);
      row->access = access ? "write" : "read";
      break;
    }
    case EventKind::kHvcArm64:
      row->name = std::string(Arm64HvcFunctionName(key));
      row->access = fmt::format("imm {:#x}", size);
      row->size = 0;
      break;
    case EventKind::kWfx:
      row->name = std::string(Arm64WfxName(key != 0));
      row->key_text = std::to_string(key);
      break;
    case EventKind::kGuestFault: {
      static constexpr std::string_view kAccess[] = {"read", "write", "fetch", "other"};
      row->access = std::string(kAccess[access & 3]);
      break;
    }
    default: break;
  }
}

}  // namespace

DetailRow ExitAggregator::MakeDetailRow(const DetailKey& k, const DetailStats& st) {
  DetailRow row;
  auto kind = static_cast<EventKind>(k.kind);
  row.kind = std::string(DetailKindName(kind));
  row.key = k.key;
  row.size = k.size;
  row.count = st.count;
  row.exit_ns = st.exit_ns;
  row.failed = st.failed;
  if (st.hist) {
    row.stats = StatsOf(*st.hist);
    row.histogram = BinsOf(*st.hist);
  }
  if (k.kind >= kFirstQualKind) {
    QualDetailText t = DescribeQualDetail(QualDetail{static_cast<QualKind>(k.kind), k.access, k.size, k.key});
    row.kind = t.kind;
    if (k.key == kOtherKey) {
      row.name = "(other keys)";
    } else {
      row.key = t.key_value;
      row.size = t.size;
      row.key_text = t.key;
      row.key_known = t.key_known;
      row.name = t.name;
      row.access = t.access;
    }
  } else if (k.key == kOtherKey) {
    row.name = "(other keys)";
  } else {
    NameEventDetail(kind, k.access, k.size, k.key, &row);
  }
  return row;
}

void ExitAggregator::Fill(Report* report) const {
  report->group_by = std::string(GroupByName(options_.by));
  // Threads per VM in one pass: labelling each VM by scanning every thread was quadratic (100k
  // threads without a recorded process: 100k VMs × 100k threads).
  TidsByVm tids_by_vm;
  for (const auto& [tid, _] : tids_seen_) tids_by_vm[vms_.VmId(tid)].push_back(tid);
  for (const auto& [id, _] : tids_by_vm) report->context.vms.push_back(GroupLabel(GroupBy::kVm, id, tids_by_vm));
  report->context.vcpu_threads = tids_seen_.size();
  LogHistogram all;
  uint64_t all_count = 0, user_count = 0, user_ns = 0, blocked_ns = 0;
  for (const auto& [gid, g] : groups_) {
    GroupReport gr = MakeGroup(gid, g, tids_by_vm);
    all_count += gr.count;
    blocked_ns += g.blocked_ns;
    all.Merge(g.total);
    user_count += g.user_count;
    user_ns += g.user_ns;
    report->groups.push_back(std::move(gr));
  }
  // Groups: most time first.
  std::stable_sort(report->groups.begin(), report->groups.end(),
                   [](const GroupReport& a, const GroupReport& b) { return a.total.total_ns > b.total.total_ns; });
  report->totals.all = StatsOf(all);
  report->totals.reported = all_count;
  report->totals.reported_threads = tids_reported_.size();
  report->totals.userspace_count = user_count;
  report->totals.userspace_ns = user_ns;
  report->totals.blocked_ns = blocked_ns;
  report->totals.filtered_out = filtered_out_;

  for (const auto& [k, st] : details_) {
    report->details.push_back(MakeDetailRow(k, st));
  }
  std::stable_sort(report->details.begin(), report->details.end(), [](const DetailRow& a, const DetailRow& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.count != b.count) return a.count > b.count;
    return a.key < b.key;
  });
}

}  // namespace exitscope
