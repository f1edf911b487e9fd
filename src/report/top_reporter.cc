#include "report/top_reporter.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/units.h"
#include "report/json_context.h"

namespace exitscope {
namespace {

nlohmann::json RowsJson(const std::vector<TopRow>& rows, const char* key) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& r : rows) {
    // No exit of the row ended in the interval: its times are unknown, not 0.
    auto time = [&r](uint64_t ns) { return r.timed ? nlohmann::json(ns) : nlohmann::json(nullptr); };
    nlohmann::json o = {{key, r.label},
                        {"exits", r.exits},
                        {"exits_per_s", r.exits_per_s},
                        {"timed", r.timed},
                        {"p50_ns", time(r.p50_ns)},
                        {"p90_ns", time(r.p90_ns)},
                        {"p99_ns", time(r.p99_ns)},
                        {"max_ns", time(r.max_ns)},
                        {"total_ns", time(r.total_ns)}};
    if (r.pid >= 0) o["pid"] = r.pid;
    if (r.tid >= 0) o["tid"] = r.tid;
    if (r.vcpu >= 0) o["vcpu"] = r.vcpu;
    a.push_back(std::move(o));
  }
  return a;
}

}  // namespace

std::string RenderTopText(const TopInterval& t) {
  std::string out = fmt::format("exitscope top — interval {} ({:.2f} s): {} exits, {:.0f} exits/s\n", t.index,
                                t.interval_s, t.exits, t.exits_per_s);
  out += "lost events:";
  for (size_t cpu = 0; cpu < t.lost_per_cpu.size(); ++cpu) {
    out += fmt::format(" cpu{} {}", cpu, t.lost_per_cpu[cpu]);
  }
  out += "\n";
  for (const auto& [name, n] : t.diagnostics) out += fmt::format("  {} {}\n", name, n);
  auto table = [&out](const char* title, const std::vector<TopRow>& rows) {
    out += fmt::format("\n{:<28} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9} {:>9}\n", title, "exits", "exits/s", "timed",
                       "p50", "p90", "p99", "max");
    for (const auto& r : rows) {
      auto time = [&r](uint64_t ns) { return r.timed ? FormatDuration(ns) : std::string("-"); };
      out += fmt::format("{:<28} {:>10} {:>10.0f} {:>9} {:>9} {:>9} {:>9} {:>9}\n", r.label, r.exits, r.exits_per_s,
                         r.timed, time(r.p50_ns), time(r.p90_ns), time(r.p99_ns), time(r.max_ns));
    }
  };
  table("VM", t.vms);
  table("VCPU", t.vcpus);
  table("REASON", t.reasons);
  return out;
}

std::string RenderTopJson(const TopInterval& t) {
  nlohmann::json j = {{"interval", t.index},
                      {"interval_s", t.interval_s},
                      {"exits", t.exits},
                      {"exits_per_s", t.exits_per_s},
                      {"lost_per_cpu", t.lost_per_cpu},
                      {"vms", RowsJson(t.vms, "vm")},
                      {"vcpus", RowsJson(t.vcpus, "vcpu_thread")},
                      {"reasons", RowsJson(t.reasons, "reason")},
                      {"diagnostics", t.diagnostics}};
  TagOutput(&j, "top", kTopSchemaVersion);
  return j.dump();
}

}  // namespace exitscope
