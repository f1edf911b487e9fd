#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "base/units.h"
#include "report/diff_reporter.h"
#include "report/text_table.h"

namespace exitscope {
namespace {

using text::Count;
using text::Table;

std::string Arrow(const std::string& a, const std::string& b) { return a == b ? a : a + " → " + b; }

std::string Dur(const std::optional<double>& v, TimeUnit u) { return v ? FormatDuration(*v, u) : "-"; }

std::string Rate(double v) {
  if (v == 0) return "0";
  if (v >= 100) return fmt::format("{:.0f}", v);
  if (v >= 1) return fmt::format("{:.1f}", v);
  return fmt::format("{:.3f}", v);
}

std::string Change(const DiffRow& r) {
  if (!r.count_change_pct) return "new";
  const double v = *r.count_change_pct;
  if (v == 0) return "0 %";
  return fmt::format("{}{:.1f} %", v < 0 ? "−" : "+", std::fabs(v));
}

std::string Vmm(const DiffCell& c) {
  if (c.count == 0) return "-";  // no exit on this side: nothing to split
  if (!c.vmm_share_pct) return c.vmm_count ? "0 %" : "?";
  return fmt::format("{:.0f} %", *c.vmm_share_pct);
}

std::string Noise(const DiffRow& r) {
  std::string s;
  if (r.count_beyond_noise) s += "count";
  if (r.latency_beyond_noise) s += s.empty() ? "latency" : "+latency";
  return s.empty() ? "-" : s;
}

std::string TimeUnitLabel(DiffNormalize n) {
  switch (n) {
    case DiffNormalize::kRun: return "TIME";
    case DiffNormalize::kSecond: return "TIME/S";
    case DiffNormalize::kVcpuSecond: return "TIME/VCPU-S";
  }
  return "TIME";
}

std::vector<std::string> Cells(const DiffRow& r, TimeUnit u, bool vmm) {
  const DiffCell &b = r.before, &a = r.after;
  std::vector<std::string> row = {
      Arrow(Count(b.count), Count(a.count)),
      Change(r),
      Arrow(Rate(b.rate_per_s), Rate(a.rate_per_s)),
      Arrow(fmt::format("{:.1f}%", b.share_pct), fmt::format("{:.1f}%", a.share_pct)),
      Arrow(Dur(b.mean_ns, u), Dur(a.mean_ns, u)),
      Arrow(Dur(b.p50_ns, u), Dur(a.p50_ns, u)),
      Arrow(Dur(b.p99_ns, u), Dur(a.p99_ns, u)),
      Arrow(FormatDuration(b.time_per_unit, u), FormatDuration(a.time_per_unit, u)),
  };
  if (vmm) row.push_back(Arrow(Vmm(b), Vmm(a)));
  row.push_back(Noise(r));
  return row;
}

std::string SideLine(const char* label, const DiffSide& s, TimeUnit u) {
  const auto& c = s.context;
  std::string duration = u == TimeUnit::kNs ? fmt::format("{:.3f} s", s.duration_s) : FormatDuration(s.duration, u);
  return fmt::format(
      "  {} {} · {} · ISA {} · duration {} · {} vCPU thread{} · {} exits{}{}{}\n", label,
      c.source.empty() ? "-" : c.source, c.format.empty() ? "?" : c.format, c.isa, duration, s.vcpu_threads,
      s.vcpu_threads == 1 ? "" : "s", Count(s.reported), s.selection.empty() ? "" : " · " + s.selection,
      s.userspace_known ? "" : " · VMM split unknown (no kvm_userspace_exit)", s.partial ? " · PARTIAL" : "");
}

std::string MetricValue(DiffMetric m, double v, TimeUnit u) {
  switch (m) {
    case DiffMetric::kCount: return fmt::format("{:.6g}", v);
    case DiffMetric::kRate: return Rate(v) + "/s";
    default: return FormatDuration(v, u);
  }
}

// The heading: both sides, the normalisation, what "beyond noise" means here, the verdict.
std::string DiffHeading(const DiffReport& d, TimeUnit u) {
  std::string out;
  if (d.partial) out += "PARTIAL RESULT: a trace lost events or held malformed data (see its diagnostics)\n\n";
  out += "exitscope diff: before → after\n";
  out += SideLine("before:", d.before, u);
  out += SideLine("after: ", d.after, u);
  out += fmt::format("  compared per {}: {}\n", DiffNormalizeName(d.normalize), d.normalize_why);
  out += fmt::format(
      "  beyond noise: Holm-adjusted p < {} and a change of at least {:.0f} % (counts: conditional binomial "
      "test of the rates) or |P(slower) − 0.5| >= {} (latency: Mann–Whitney U)\n",
      d.alpha, d.min_change_pct, d.min_effect);
  out += "\nverdict: " + d.verdict + "\n";
  return out;
}

std::string ReasonTable(const DiffReport& d, const std::vector<std::string>& cols, TimeUnit u, bool vmm) {
  std::vector<std::string> header = {"REASON"};
  header.insert(header.end(), cols.begin(), cols.end());
  Table t(header);
  auto total = Cells(d.total, u, vmm);
  total.insert(total.begin(), "all exits");
  t.Add(std::move(total));
  for (const DiffRow& r : d.reasons) {
    auto row = Cells(r, u, vmm);
    row.insert(row.begin(), r.key);
    t.Add(std::move(row));
  }
  return "\nexit reasons (top movers first):\n" + t.Render("  ");
}

// The detail keys that moved (all with --all), up to --rows, and how many were left out.
std::string DetailTable(const DiffReport& d, const TextDiffOptions& o, const std::vector<std::string>& cols, TimeUnit u,
                        bool vmm) {
  std::vector<std::string> dheader = {"KIND", "KEY", "NAME", "ACCESS"};
  dheader.insert(dheader.end(), cols.begin(), cols.end());
  if (vmm) dheader.erase(dheader.begin() + 4 + 8);  // details carry no VMM split
  Table dt(dheader, "llll");
  size_t shown = 0, hidden = 0;
  for (const DiffRow& r : d.details) {
    const bool moved = r.before.count != r.after.count || r.beyond_noise();
    if (!o.all_rows && !moved) {
      ++hidden;
      continue;
    }
    if (shown == o.max_detail_rows) {
      ++hidden;
      continue;
    }
    auto row = Cells(r, u, false);
    row.insert(row.begin(), {r.kind, r.key, r.name.empty() ? "-" : r.name, r.access.empty() ? "-" : r.access});
    dt.Add(std::move(row));
    ++shown;
  }
  std::string out;
  if (shown) out += "\ndetail keys (top movers first):\n" + dt.Render("  ");
  if (hidden)
    out += fmt::format("  ({} more detail key{} {}; --json has all)\n", hidden, hidden == 1 ? "" : "s",
                       shown ? "not shown" : "with the same count on both sides");
  return out;
}

// Each --fail-if with its measured change and whether it tripped.
std::string ThresholdLines(const DiffReport& d, TimeUnit u) {
  if (d.thresholds.empty()) return {};
  std::string out = "\nthresholds (--fail-if):\n";
  size_t width = 0;
  for (const auto& r : d.thresholds) width = std::max(width, r.threshold.text.size());
  for (const auto& r : d.thresholds) {
    const DiffThreshold& th = r.threshold;
    std::string what;
    if (!r.matched) {
      what = "no such row in either trace";
    } else if (!r.change) {
      what = fmt::format("{} unknown on a side", DiffMetricName(th.metric));
    } else {
      std::string change = th.relative ? (std::isinf(*r.change) ? "new" : fmt::format("{:+.1f} %", *r.change))
                                       : (*r.change < 0 ? "−" : "+") + MetricValue(th.metric, std::fabs(*r.change), u);
      what = fmt::format("{} → {} ({})", MetricValue(th.metric, *r.before, u), MetricValue(th.metric, *r.after, u),
                         change);
    }
    out += fmt::format("  {:<{}}  {}  {}\n", th.text, width, what,
                       r.tripped ? (r.beyond_noise ? "TRIPPED (beyond noise)" : "TRIPPED (within noise)") : "ok");
  }
  return out;
}

}  // namespace

std::string RenderTextDiff(const DiffReport& d, const TextDiffOptions& o) {
  const TimeUnit u = d.time_unit;
  std::string out = DiffHeading(d, u);
  const bool vmm = d.before.userspace_known || d.after.userspace_known;
  std::vector<std::string> cols = {"EXITS", "CHANGE", "EXITS/S", "SHARE",
                                   "MEAN",  "P50",    "P99",     TimeUnitLabel(d.normalize)};
  if (vmm) cols.push_back("TO VMM");
  cols.push_back("BEYOND NOISE");
  out += ReasonTable(d, cols, u, vmm);
  out += DetailTable(d, o, cols, u, vmm);
  out += ThresholdLines(d, u);
  for (const auto* side : {&d.before, &d.after}) {
    if (side->diagnostics.empty()) continue;
    out += fmt::format("\n{} diagnostics:\n", side == &d.before ? "before" : "after");
    for (const auto& c : side->diagnostics)
      out += fmt::format("  {} {} {}\n", SeverityName(c.severity), c.name, Count(c.count));
  }
  return out;
}

}  // namespace exitscope
