#include "report/json_reporter.h"

#include "report/json_context.h"

#include <nlohmann/json.hpp>

namespace exitscope {
namespace {

using nlohmann::json;

// "count" is every exit, "timed_count" those with a time; the *_ns fields are the handling time of
// the timed ones (null when none is timed: unknown, not zero), "blocked_ns" their blocked time.
json StatsJson(const DurationStats& s, uint64_t count, uint64_t blocked_ns) {
  json j{{"count", count}, {"timed_count", s.count}};
  const bool timed = s.count != 0;
  auto ns = [&](auto v) { return timed ? json(v) : json(nullptr); };
  j["total_ns"] = ns(s.total_ns);
  j["blocked_ns"] = ns(blocked_ns);
  j["min_ns"] = ns(s.min_ns);
  j["mean_ns"] = ns(s.mean_ns);
  j["p50_ns"] = ns(s.p50_ns);
  j["p90_ns"] = ns(s.p90_ns);
  j["p99_ns"] = ns(s.p99_ns);
  j["p999_ns"] = ns(s.p999_ns);
  j["max_ns"] = ns(s.max_ns);
  return j;
}

// The VMM split is a claim only when kvm_userspace_exit was recorded; else null.
json Known(bool known, uint64_t v) { return known ? json(v) : json(nullptr); }

// The whole trace's counts: events, exits, the reported exits' stats, the VMM split, wake-ups.
json TotalsJson(const ReportTotals& t) {
  json j{{"events", t.events},
         {"records", t.records},
         {"kvm_exit", t.exits},
         {"kvm_entry", t.entries},
         {"timed_exits", t.timed},
         {"untimed_exits", t.untimed},
         {"filtered_out", t.filtered_out},
         {"reported", StatsJson(t.all, t.reported, t.blocked_ns)},
         {"userspace_recorded", t.userspace_known},
         {"userspace_count", Known(t.userspace_known, t.userspace_count)},
         {"userspace_ns", Known(t.userspace_known, t.userspace_ns)},
         {"in_kernel_count", Known(t.userspace_known, t.all.count - t.userspace_count)},
         {"in_kernel_ns", Known(t.userspace_known, t.all.total_ns - t.userspace_ns)},
         {"vcpu_wakeups", t.wakeups ? json{{"count", t.wakeups},
                                           {"polled", t.wakeups_polled},
                                           {"waited", t.wakeups - t.wakeups_polled},
                                           {"invalid", t.wakeups_invalid}}
                                    : json(nullptr)},
         {"silences", t.silences},
         {"silence_ns", t.silence_ns}};
  if (t.timer_irqs || t.vgic_irqs) {  // arm64 only
    j["arm64_irq_events"] = json{{"kvm_timer_update_irq", t.timer_irqs}, {"vgic_update_irq_pending", t.vgic_irqs}};
  }
  return j;
}

// One group (VM, vCPU thread, CPU or all) with its reason rows; t: the report's totals, for
// whether the VMM split is known.
json GroupJson(const GroupReport& g, const ReportTotals& t) {
  json reasons = json::array();
  for (const auto& row : g.reasons) {
    json jr = StatsJson(row.stats, row.count, row.blocked_ns);
    jr["reason"] = row.name;
    jr["isa"] = std::string(IsaName(row.isa));
    jr["code"] = row.code;
    jr["pct_count"] = row.pct_count;
    jr["pct_time"] = row.stats.count ? json(row.pct_time) : json(nullptr);
    jr["userspace_count"] = Known(t.userspace_known, row.userspace_count);
    jr["userspace_ns"] = Known(t.userspace_known, row.userspace_ns);
    reasons.push_back(std::move(jr));
  }
  return json{{"kind", g.kind},
              {"id", g.id},
              {"label", g.label},
              {"total", StatsJson(g.total, g.count, g.blocked_ns)},
              {"userspace_count", Known(t.userspace_known, g.userspace_count)},
              {"userspace_ns", Known(t.userspace_known, g.userspace_ns)},
              {"reasons", std::move(reasons)},
              {"reasons_hidden", g.reasons_hidden}};
}

}  // namespace

std::string RenderJsonReport(const Report& r) {
  json out;
  TagOutput(&out, "report", r.schema_version);
  out["context"] = ContextJson(r.context);
  const auto& t = r.totals;
  out["totals"] = TotalsJson(t);
  out["group_by"] = r.group_by;
  json groups = json::array();
  for (const auto& g : r.groups) groups.push_back(GroupJson(g, t));
  out["groups"] = std::move(groups);
  json details = json::array();
  for (const auto& d : r.details) {
    details.push_back(json{{"kind", d.kind},
                           {"key", d.key_known ? json(d.key) : json(nullptr)},
                           {"name", d.name},
                           {"access", d.access},
                           {"size", d.size},
                           {"count", d.count},
                           {"exit_ns", d.exit_ns},
                           {"failed", d.failed}});
  }
  out["details"] = std::move(details);
  out["diagnostics"] = DiagnosticsJson(r.diagnostics);
  out["partial"] = r.partial;
  return out.dump(2) + "\n";
}

}  // namespace exitscope
