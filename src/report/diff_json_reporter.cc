#include <cmath>
#include <nlohmann/json.hpp>

#include "base/json_schema.h"
#include "base/units.h"
#include "report/diff_reporter.h"

namespace exitscope {
namespace {

using nlohmann::ordered_json;

template <typename T>
ordered_json Opt(const std::optional<T>& v) {
  return v ? ordered_json(*v) : ordered_json(nullptr);
}

ordered_json CellJson(const DiffCell& c) {
  return ordered_json{{"count", c.count},
                      {"timed_count", c.timed},
                      {"rate_per_s", c.rate_per_s},
                      {"share_pct", c.share_pct},
                      {"per_unit", c.per_unit},
                      {"mean_ns", Opt(c.mean_ns)},
                      {"p50_ns", Opt(c.p50_ns)},
                      {"p99_ns", Opt(c.p99_ns)},
                      {"total_ns", c.total_ns},
                      {"time_per_unit_ns", c.time_per_unit},
                      {"vmm_count", Opt(c.vmm_count)},
                      {"vmm_share_pct", Opt(c.vmm_share_pct)},
                      {"vmm_ns", Opt(c.vmm_ns)},
                      {"in_kernel_ns", Opt(c.in_kernel_ns)}};
}

ordered_json RowJson(const DiffRow& r) {
  ordered_json j{{"kind", r.kind}, {"key", r.key}};
  if (r.kind != "reason" && r.kind != "total") {
    j["name"] = r.name;
    j["access"] = r.access;
    j["size"] = r.size;
  }
  j["before"] = CellJson(r.before);
  j["after"] = CellJson(r.after);
  j["count_change_pct"] = Opt(r.count_change_pct);  // null: none before, some after
  j["time_change_per_unit_ns"] = r.time_change_per_unit;
  j["count_p"] = r.count_p;
  j["latency_p"] = Opt(r.latency_p);
  j["latency_effect"] = Opt(r.latency_effect);
  j["count_beyond_noise"] = r.count_beyond_noise;
  j["latency_beyond_noise"] = r.latency_beyond_noise;
  j["beyond_noise"] = r.beyond_noise();
  return j;
}

ordered_json SideJson(const DiffSide& s) {
  const auto& c = s.context;
  ordered_json diags = ordered_json::array();
  for (const auto& d : s.diagnostics) {
    diags.push_back(
        ordered_json{{"name", d.name}, {"severity", std::string(SeverityName(d.severity))}, {"count", d.count}});
  }
  return ordered_json{{"source", c.source},
                      {"format", c.format},
                      {"kernel", c.kernel},
                      {"isa", c.isa},
                      {"clock", c.clock},
                      {"selection", s.selection},
                      {"duration_ns", s.duration},
                      {"duration_s", s.duration_s},
                      {"vcpu_threads", s.vcpu_threads},
                      {"reported_exits", s.reported},
                      {"userspace_recorded", s.userspace_known},
                      {"partial", s.partial},
                      {"diagnostics", std::move(diags)}};
}

}  // namespace

std::string RenderJsonDiff(const DiffReport& d) {
  ordered_json out;
  TagSchema(&out, "diff", d.schema_version);
  out["tool"] = "exitscope";
  out["tool_version"] = EXITSCOPE_VERSION;
  out["before"] = SideJson(d.before);
  out["after"] = SideJson(d.after);
  // Every *_ns value is in this unit; "per_unit" values are per run, second or vCPU-second.
  out["time_unit"] = TimeUnitName(d.time_unit);
  out["normalize"] = DiffNormalizeName(d.normalize);
  out["normalize_why"] = d.normalize_why;
  out["tests"] = ordered_json{{"count", "conditional binomial test of two Poisson rates (exact)"},
                              {"latency", "Mann-Whitney U on the binned histograms (normal approximation, ties)"},
                              {"adjustment", "holm"},
                              {"alpha", d.alpha},
                              {"min_change_pct", d.min_change_pct},
                              {"min_effect", d.min_effect}};
  out["verdict"] = d.verdict;
  out["total"] = RowJson(d.total);
  ordered_json reasons = ordered_json::array(), details = ordered_json::array();
  for (const auto& r : d.reasons) reasons.push_back(RowJson(r));
  for (const auto& r : d.details) details.push_back(RowJson(r));
  out["reasons"] = std::move(reasons);
  out["details"] = std::move(details);
  ordered_json th = ordered_json::array();
  for (const auto& r : d.thresholds) {
    // A row new in AFTER has an infinite relative change: null with "new" true (JSON has no inf).
    const bool is_new = r.change.has_value() && std::isinf(*r.change);
    ordered_json change = r.change.has_value() && !is_new ? ordered_json(*r.change) : ordered_json(nullptr);
    th.push_back(ordered_json{{"expr", r.threshold.text},
                              {"subject", r.threshold.subject},
                              {"metric", DiffMetricName(r.threshold.metric)},
                              {"relative", r.threshold.relative},
                              {"value", r.threshold.value},
                              {"matched", r.matched},
                              {"before", Opt(r.before)},
                              {"after", Opt(r.after)},
                              {"change", std::move(change)},
                              {"new", is_new},
                              {"tripped", r.tripped},
                              {"beyond_noise", r.beyond_noise}});
  }
  out["thresholds"] = std::move(th);
  out["tripped"] = d.tripped;
  out["partial"] = d.partial;
  return out.dump(2) + "\n";
}

}  // namespace exitscope
