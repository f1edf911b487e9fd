#include "report/json_reporter.h"

#include <nlohmann/json.hpp>

namespace exitscope {
namespace {

using nlohmann::json;

// "count" is every exit, "timed_count" those with a time; the *_ns fields cover the timed ones.
json StatsJson(const DurationStats& s, uint64_t count) {
  return json{{"count", count},       {"timed_count", s.count}, {"total_ns", s.total_ns},
              {"min_ns", s.min_ns},   {"mean_ns", s.mean_ns},   {"p50_ns", s.p50_ns},
              {"p90_ns", s.p90_ns},   {"p99_ns", s.p99_ns},     {"p999_ns", s.p999_ns},
              {"max_ns", s.max_ns}};
}

}  // namespace

std::string RenderJsonReport(const Report& r) {
  json out;
  out["schema_version"] = r.schema_version;
  out["tool"] = "exitscope";
  out["tool_version"] = EXITSCOPE_VERSION;
  const auto& c = r.context;
  out["context"] = json{{"source", c.source},
                        {"format", c.format},
                        {"kernel", c.kernel},
                        {"isa", c.isa},
                        {"clock", c.clock},
                        {"cpu_description", c.cpu_description},
                        {"cpu_count", c.cpu_count},
                        {"first_ts_ns", c.first_ts_ns},
                        {"last_ts_ns", c.last_ts_ns},
                        {"duration_ns", c.last_ts_ns - c.first_ts_ns},
                        {"vms", c.vms},
                        {"vcpu_threads", c.vcpu_threads},
                        {"filters", c.filters}};
  const auto& t = r.totals;
  out["totals"] = json{{"events", t.events},
                       {"records", t.records},
                       {"kvm_exit", t.exits},
                       {"kvm_entry", t.entries},
                       {"timed_exits", t.timed},
                       {"untimed_exits", t.untimed},
                       {"filtered_out", t.filtered_out},
                       {"reported", StatsJson(t.all, t.reported)},
                       {"userspace_count", t.userspace_count},
                       {"userspace_ns", t.userspace_ns},
                       {"in_kernel_count", t.all.count - t.userspace_count},
                       {"in_kernel_ns", t.all.total_ns - t.userspace_ns}};
  out["group_by"] = r.group_by;
  json groups = json::array();
  for (const auto& g : r.groups) {
    json reasons = json::array();
    for (const auto& row : g.reasons) {
      json jr = StatsJson(row.stats, row.count);
      jr["reason"] = row.name;
      jr["isa"] = std::string(IsaName(row.isa));
      jr["code"] = row.code;
      jr["pct_count"] = row.pct_count;
      jr["pct_time"] = row.pct_time;
      jr["userspace_count"] = row.userspace_count;
      jr["userspace_ns"] = row.userspace_ns;
      reasons.push_back(std::move(jr));
    }
    groups.push_back(json{{"kind", g.kind},
                          {"id", g.id},
                          {"label", g.label},
                          {"total", StatsJson(g.total, g.count)},
                          {"userspace_count", g.userspace_count},
                          {"userspace_ns", g.userspace_ns},
                          {"reasons", std::move(reasons)},
                          {"reasons_hidden", g.reasons_hidden}});
  }
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
  json diags = json::array();
  for (const auto& d : r.diagnostics) {
    diags.push_back(json{{"name", d.name},
                         {"severity", std::string(SeverityName(d.severity))},
                         {"count", d.count},
                         {"description", d.description}});
  }
  out["diagnostics"] = std::move(diags);
  out["partial"] = r.partial;
  return out.dump(2) + "\n";
}

}  // namespace exitscope
