#include "analysis/report_diff.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <cctype>
#include <map>
#include <tuple>

#include "analysis/change_tests.h"
#include "base/units.h"
#include "decode/exit_reasons.h"

namespace exitscope {
namespace {

// What one side of a row is made from: a reason row, a detail row or the totals.
struct RowInput {
  uint64_t count = 0, timed = 0, total_ns = 0;
  double mean_ns = 0;
  uint64_t p50_ns = 0, p99_ns = 0;
  bool has_vmm = false;  // the row kind carries a VMM split (reasons and totals)
  uint64_t vmm_count = 0, vmm_ns = 0;
  std::vector<HistogramBin> bins;
};

struct PendingRow {
  DiffRow row;
  std::optional<RowInput> before, after;
};

DiffSide MakeSide(const Report& r, const DiffOptions& o, const std::string& selection) {
  DiffSide s;
  s.context = r.context;
  s.selection = selection;
  // The span of the kvm events, not of every record: two recorders of one run start and stop at
  // different moments (trace-cmd's start-up under TCG adds tenths of a second), the exits do not.
  const bool kvm = r.totals.events != 0 && r.totals.kvm_last_ts_ns >= r.totals.kvm_first_ts_ns;
  const uint64_t span =
      kvm ? r.totals.kvm_last_ts_ns - r.totals.kvm_first_ts_ns : r.context.last_ts_ns - r.context.first_ts_ns;
  const bool ns = r.context.time_unit == TimeUnit::kNs;
  uint64_t from = 0, to = span;
  if (ns && o.from_s) from = std::min<uint64_t>(span, static_cast<uint64_t>(*o.from_s * 1e9));
  if (ns && o.to_s) to = std::min<uint64_t>(span, static_cast<uint64_t>(*o.to_s * 1e9));
  s.duration = to > from ? to - from : 0;
  s.duration_s = ns ? static_cast<double>(s.duration) * 1e-9 : 0;
  s.vcpu_threads = r.totals.reported_threads;
  s.reported = r.totals.reported;
  s.userspace_known = r.totals.userspace_known;
  s.partial = r.partial;
  s.diagnostics = r.diagnostics;
  return s;
}

double Exposure(const DiffSide& s, DiffNormalize n) {
  switch (n) {
    case DiffNormalize::kRun: return 1;
    case DiffNormalize::kSecond: return s.duration_s;
    case DiffNormalize::kVcpuSecond: return s.duration_s * static_cast<double>(std::max<uint64_t>(1, s.vcpu_threads));
  }
  return 1;
}

DiffCell MakeCell(const std::optional<RowInput>& in, const DiffSide& side, double exposure) {
  DiffCell c;
  if (!in) return c;
  c.count = in->count;
  c.timed = in->timed;
  c.rate_per_s = side.duration_s > 0 ? static_cast<double>(in->count) / side.duration_s : 0;
  c.share_pct = side.reported ? 100.0 * static_cast<double>(in->count) / static_cast<double>(side.reported) : 0;
  c.per_unit = exposure > 0 ? static_cast<double>(in->count) / exposure : 0;
  c.total_ns = in->total_ns;
  c.time_per_unit = exposure > 0 ? static_cast<double>(in->total_ns) / exposure : 0;
  if (in->timed) {
    c.mean_ns = in->mean_ns;
    c.p50_ns = static_cast<double>(in->p50_ns);
    c.p99_ns = static_cast<double>(in->p99_ns);
  }
  if (in->has_vmm && side.userspace_known) {
    c.vmm_count = in->vmm_count;
    c.vmm_ns = in->vmm_ns;
    c.in_kernel_ns = in->total_ns - std::min(in->total_ns, in->vmm_ns);
    if (in->timed) c.vmm_share_pct = 100.0 * static_cast<double>(in->vmm_count) / static_cast<double>(in->timed);
  }
  return c;
}

RowInput FromReason(const ReasonRow& r) {
  RowInput in;
  in.count = r.count;
  in.timed = r.stats.count;
  in.total_ns = r.stats.total_ns;
  in.mean_ns = r.stats.mean_ns;
  in.p50_ns = r.stats.p50_ns;
  in.p99_ns = r.stats.p99_ns;
  in.has_vmm = true;
  in.vmm_count = r.userspace_count;
  in.vmm_ns = r.userspace_ns;
  in.bins = r.histogram;
  return in;
}

RowInput FromDetail(const DetailRow& d) {
  RowInput in;
  in.count = d.count;
  in.timed = d.stats.count;
  in.total_ns = d.stats.count ? d.stats.total_ns : d.exit_ns;
  in.mean_ns = d.stats.mean_ns;
  in.p50_ns = d.stats.p50_ns;
  in.p99_ns = d.stats.p99_ns;
  in.bins = d.histogram;
  return in;
}

// Every reported exit: the totals, with the reasons' bins summed bucket by bucket.
RowInput FromTotals(const Report& r) {
  RowInput in;
  const ReportTotals& t = r.totals;
  in.count = t.reported;
  in.timed = t.all.count;
  in.total_ns = t.all.total_ns;
  in.mean_ns = t.all.mean_ns;
  in.p50_ns = t.all.p50_ns;
  in.p99_ns = t.all.p99_ns;
  in.has_vmm = true;
  in.vmm_count = t.userspace_count;
  in.vmm_ns = t.userspace_ns;
  std::map<uint64_t, HistogramBin> merged;
  for (const auto& g : r.groups) {
    for (const auto& row : g.reasons) {
      for (const auto& b : row.histogram) {
        HistogramBin& m = merged[b.lo_ns];
        m.lo_ns = b.lo_ns;
        m.hi_ns = b.hi_ns;
        m.count += b.count;
      }
    }
  }
  for (const auto& [_, b] : merged) in.bins.push_back(b);
  return in;
}

std::string DetailRowKey(const DetailRow& d) {
  return fmt::format("{}|{}|{}|{}", d.kind, DetailKeyText(d), d.access, d.size);
}

void Fill(PendingRow* p, const DiffReport& d) {
  DiffRow& row = p->row;
  const double e1 = Exposure(d.before, d.normalize), e2 = Exposure(d.after, d.normalize);
  row.before = MakeCell(p->before, d.before, e1);
  row.after = MakeCell(p->after, d.after, e2);
  if (row.before.per_unit > 0) {
    row.count_change_pct = 100.0 * (row.after.per_unit / row.before.per_unit - 1);
  } else if (row.after.per_unit == 0) {
    row.count_change_pct = 0;
  }
  row.time_change_per_unit = row.after.time_per_unit - row.before.time_per_unit;
  row.count_p = PoissonRateTestP(row.before.count, e1, row.after.count, e2);
  static const std::vector<HistogramBin> kNone;
  auto rank = MannWhitneyBinned(p->before ? p->before->bins : kNone, p->after ? p->after->bins : kNone);
  if (rank) {
    row.latency_p = rank->p;
    row.latency_effect = rank->effect;
  }
}

void Decide(DiffRow* row, const DiffOptions& o) {
  const bool big = !row->count_change_pct || std::fabs(*row->count_change_pct) >= o.min_change_pct;
  row->count_beyond_noise = row->count_p < o.alpha && big;
  row->latency_beyond_noise = row->latency_p && *row->latency_p < o.alpha && row->latency_effect &&
                              std::fabs(*row->latency_effect - 0.5) >= o.min_effect;
}

// Beyond noise first, then the largest change of exit time, then of exits.
bool MoverFirst(const DiffRow& a, const DiffRow& b) {
  if (a.beyond_noise() != b.beyond_noise()) return a.beyond_noise();
  const double ta = std::fabs(a.time_change_per_unit), tb = std::fabs(b.time_change_per_unit);
  if (ta != tb) return ta > tb;
  const double ca = std::fabs(a.after.per_unit - a.before.per_unit),
               cb = std::fabs(b.after.per_unit - b.before.per_unit);
  if (ca != cb) return ca > cb;
  return std::tie(a.kind, a.key, a.access) < std::tie(b.kind, b.key, b.access);
}

std::string SignedPct(double v) {
  if (std::isinf(v)) return "new";
  return fmt::format("{}{:.0f} %", v < 0 ? "−" : "+", std::fabs(v));
}

std::string UnitSuffix(DiffNormalize n) {
  switch (n) {
    case DiffNormalize::kRun: return "";
    case DiffNormalize::kSecond: return "/s";
    case DiffNormalize::kVcpuSecond: return "/s per vCPU";
  }
  return "";
}

std::string SignedDuration(double ns, TimeUnit unit) {
  return (ns < 0 ? "−" : "+") + FormatDuration(std::fabs(ns), unit);
}

std::string Verdict(const DiffReport& d) {
  std::vector<std::string> parts;
  for (const DiffRow& r : d.reasons) {
    if (!r.beyond_noise() || parts.size() == 3) continue;
    std::string part = r.key;
    if (r.count_beyond_noise) {
      part += r.count_change_pct ? " exits " + SignedPct(*r.count_change_pct) : " exits new";
    }
    if (r.latency_beyond_noise && r.before.p50_ns && r.after.p50_ns) {
      part += fmt::format("{} p50 {} → {}", r.count_beyond_noise ? "," : "",
                          FormatDuration(*r.before.p50_ns, d.time_unit), FormatDuration(*r.after.p50_ns, d.time_unit));
    }
    if (r.before.timed || r.after.timed)
      part += ", time " + SignedDuration(r.time_change_per_unit, d.time_unit) + UnitSuffix(d.normalize);
    parts.push_back(std::move(part));
  }
  // A detail key that moved beyond noise says what the reasons do not (KVM_EXIT_MMIO gone, a new MSR).
  for (const DiffRow& r : d.details) {
    if (!r.count_beyond_noise || parts.size() >= 3) continue;
    std::string who = r.name.empty() ? r.kind + ":" + r.key : r.name;
    if (std::any_of(parts.begin(), parts.end(), [&](const std::string& p) { return p.rfind(who + " ", 0) == 0; }))
      continue;
    parts.push_back(who + (r.count_change_pct ? " exits " + SignedPct(*r.count_change_pct) : " exits new"));
  }
  const DiffRow& t = d.total;
  std::string total;
  if (t.before.timed || t.after.timed) {
    total = t.time_change_per_unit == 0
                ? "exit time unchanged"
                : "exit time " + SignedDuration(t.time_change_per_unit, d.time_unit) + UnitSuffix(d.normalize);
    if (t.before.time_per_unit > 0 && t.time_change_per_unit != 0)
      total += " (" + SignedPct(100.0 * (t.after.time_per_unit / t.before.time_per_unit - 1)) + ")";
  } else if (t.count_change_pct) {
    total = *t.count_change_pct == 0 ? "exits unchanged" : "exits " + SignedPct(*t.count_change_pct);
  }
  if (parts.empty()) {
    size_t beyond =
        std::count_if(d.details.begin(), d.details.end(), [](const DiffRow& r) { return r.beyond_noise(); });
    std::string head = beyond ? fmt::format("no exit reason changed beyond noise ({} detail key{} did)", beyond,
                                            beyond == 1 ? "" : "s")
                              : "no change beyond noise";
    return head +
           fmt::format(" ({} reason{}, {} detail key{} compared)", d.reasons.size(), d.reasons.size() == 1 ? "" : "s",
                       d.details.size(), d.details.size() == 1 ? "" : "s") +
           (total.empty() ? "" : "; " + total);
  }
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out + (total.empty() ? "" : "; " + total);
}

std::optional<double> MetricOf(const DiffCell& c, DiffMetric m) {
  switch (m) {
    case DiffMetric::kCount: return c.per_unit;
    case DiffMetric::kRate: return c.rate_per_s;
    case DiffMetric::kMean: return c.mean_ns;
    case DiffMetric::kP50: return c.p50_ns;
    case DiffMetric::kP99: return c.p99_ns;
    case DiffMetric::kTime: return c.time_per_unit;
  }
  return std::nullopt;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

bool SubjectMatches(const DiffThreshold& th, const DiffRow& row) {
  const std::string subject = ToLower(th.subject);
  if (row.kind == "total") return subject == "all" || subject == "total";
  if (row.kind == "reason") {
    if (subject.find(':') != std::string::npos) return false;
    return ReasonCodesFromName(th.subject).Matches(row.isa, row.code) || ToLower(row.key) == subject;
  }
  size_t colon = subject.find(':');
  if (colon == std::string::npos || subject.substr(0, colon) != ToLower(row.kind)) return false;
  const std::string key = subject.substr(colon + 1);
  return key == ToLower(row.key) || (!row.name.empty() && key == ToLower(row.name));
}

void Evaluate(DiffThresholdResult* res, const DiffRow& row) {
  const DiffThreshold& th = res->threshold;
  auto b = MetricOf(row.before, th.metric), a = MetricOf(row.after, th.metric);
  if (!b || !a) return;
  std::optional<double> change;
  if (th.relative) {
    change = *b > 0 ? 100.0 * (*a / *b - 1) : *a > 0 ? INFINITY : 0.0;
  } else {
    change = *a - *b;
  }
  const bool trips = th.greater ? (th.or_equal ? *change >= th.value : *change > th.value)
                                : (th.or_equal ? *change <= th.value : *change < th.value);
  // Of several matching rows (msr = MSR_READ + MSR_WRITE on VMX), the one that trips, else the first.
  if (!res->change || (trips && !res->tripped)) {
    res->before = b;
    res->after = a;
    res->change = change;
    res->tripped = trips;
    res->beyond_noise = row.beyond_noise();
  }
}

// The normalisation: as --per asked, else chosen from the two sides' durations and vCPU threads.
Status ChooseNormalization(const DiffOptions& o, DiffReport* d) {
  const bool ns = d->time_unit == TimeUnit::kNs && d->before.duration_s > 0 && d->after.duration_s > 0;
  if (o.normalize) {
    if (*o.normalize != DiffNormalize::kRun && !ns) {
      return MakeError(kExitUsage, "diff.no-seconds",
                       fmt::format("--per {} needs both traces to last a time in ns", DiffNormalizeName(*o.normalize)),
                       "use --per run (compare the raw counts), or --tsc-khz N for a trace in TSC cycles");
    }
    d->normalize = *o.normalize;
    d->normalize_why = "as asked (--per)";
  } else if (!ns) {
    d->normalize = DiffNormalize::kRun;
    d->normalize_why = "a trace's times are not ns: raw counts compared";
  } else if (d->before.vcpu_threads != d->after.vcpu_threads && d->before.vcpu_threads && d->after.vcpu_threads) {
    d->normalize = DiffNormalize::kVcpuSecond;
    d->normalize_why =
        fmt::format("the traces have {} and {} vCPU threads", d->before.vcpu_threads, d->after.vcpu_threads);
  } else if (std::fabs(d->after.duration_s / d->before.duration_s - 1) > kAutoDurationTolerance) {
    d->normalize = DiffNormalize::kSecond;
    d->normalize_why = fmt::format("the traces last {:.3f} s and {:.3f} s", d->before.duration_s, d->after.duration_s);
  } else {
    d->normalize = DiffNormalize::kRun;
    d->normalize_why = fmt::format(
        "the traces last {:.3f} s and {:.3f} s (within {:.0f} %) with {} vCPU thread{}: "
        "raw counts compared",
        d->before.duration_s, d->after.duration_s, 100 * kAutoDurationTolerance, d->before.vcpu_threads,
        d->before.vcpu_threads == 1 ? "" : "s");
  }
  return {};
}

// The two sides' rows matched by name: the total, reasons, then detail keys.
struct MatchedRows {
  PendingRow total;
  std::map<std::string, PendingRow> reasons, details;
};

MatchedRows MatchRows(const Report& before, const Report& after) {
  MatchedRows m;
  auto add_reasons = [&](const Report& r, bool is_before) {
    for (const auto& g : r.groups) {
      for (const auto& row : g.reasons) {
        PendingRow& p = m.reasons[row.name];
        p.row.kind = "reason";
        p.row.key = row.name;
        p.row.isa = row.isa;
        p.row.code = row.code;
        (is_before ? p.before : p.after) = FromReason(row);
      }
    }
  };
  auto add_details = [&](const Report& r, bool is_before) {
    for (const auto& row : r.details) {
      PendingRow& p = m.details[DetailRowKey(row)];
      p.row.kind = row.kind;
      p.row.key = DetailKeyText(row);
      p.row.name = row.name;
      p.row.access = row.access;
      p.row.size = row.size;
      (is_before ? p.before : p.after) = FromDetail(row);
    }
  };
  add_reasons(before, true);
  add_reasons(after, false);
  add_details(before, true);
  add_details(after, false);
  m.total.row.kind = "total";
  m.total.row.key = "all";
  m.total.before = FromTotals(before);
  m.total.after = FromTotals(after);
  return m;
}

// Every row measured and tested, the p values adjusted over the whole family (Holm), each row
// decided and the movers put first.
void TestRows(MatchedRows& m, const DiffOptions& o, DiffReport* d) {
  Fill(&m.total, *d);
  for (auto& [_, p] : m.reasons) Fill(&p, *d);
  for (auto& [_, p] : m.details) Fill(&p, *d);
  std::vector<double*> family;
  auto enlist = [&](DiffRow& r) {
    family.push_back(&r.count_p);
    if (r.latency_p) family.push_back(&*r.latency_p);
  };
  enlist(m.total.row);
  for (auto& [_, p] : m.reasons) enlist(p.row);
  for (auto& [_, p] : m.details) enlist(p.row);
  HolmAdjust(family);
  d->total = m.total.row;
  Decide(&d->total, o);
  for (auto& [_, p] : m.reasons) {
    Decide(&p.row, o);
    d->reasons.push_back(std::move(p.row));
  }
  for (auto& [_, p] : m.details) {
    Decide(&p.row, o);
    d->details.push_back(std::move(p.row));
  }
  std::stable_sort(d->reasons.begin(), d->reasons.end(), MoverFirst);
  std::stable_sort(d->details.begin(), d->details.end(), MoverFirst);
}

// Each --fail-if against the rows it names.
void EvaluateThresholds(const DiffOptions& o, DiffReport* d) {
  for (const DiffThreshold& th : o.thresholds) {
    DiffThresholdResult res;
    res.threshold = th;
    auto visit = [&](const DiffRow& row) {
      if (!SubjectMatches(th, row)) return;
      res.matched = true;
      Evaluate(&res, row);
    };
    visit(d->total);
    for (const auto& r : d->reasons) visit(r);
    for (const auto& r : d->details) visit(r);
    d->tripped = d->tripped || res.tripped;
    d->thresholds.push_back(std::move(res));
  }
}

}  // namespace

Result<DiffReport> DiffReports(const Report& before, const Report& after, const DiffOptions& o) {
  DiffReport d;
  d.alpha = o.alpha;
  d.min_change_pct = o.min_change_pct;
  d.min_effect = o.min_effect;
  d.before = MakeSide(before, o, o.before_selection);
  d.after = MakeSide(after, o, o.after_selection);
  d.partial = before.partial || after.partial;
  const TimeUnit ub = before.context.time_unit, ua = after.context.time_unit;
  if (ub != ua) {
    return MakeError(kExitUsage, "diff.time-units",
                     fmt::format("the two traces' times are in different units ({} before, {} after): their "
                                 "exit times cannot be compared",
                                 TimeUnitName(ub), TimeUnitName(ua)),
                     "pass --tsc-khz N (the recording host's TSC rate in kHz) to convert a trace recorded "
                     "with the x86-tsc clock to ns");
  }
  d.time_unit = ub;
  if (Status st = ChooseNormalization(o, &d); !st.ok()) return st.error();
  MatchedRows rows = MatchRows(before, after);
  TestRows(rows, o, &d);
  d.verdict = Verdict(d);
  EvaluateThresholds(o, &d);
  return d;
}

}  // namespace exitscope
