#include "report/rip_reporter.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "base/units.h"
#include "report/json_context.h"

namespace exitscope {

std::string RenderRipText(const RipSummary& s, const std::string& source) {
  const TimeUnit u = s.time_unit;
  std::string out = fmt::format("exitscope report --by rip: {}\n", source);
  for (const auto& note : s.clock_notes) out += fmt::format("warning: {}\n", note);
  out += fmt::format("{} timed exits, {} of exit time\n{}\n", s.exits, FormatDuration(s.time_ns, u), s.symbols);
  for (const RipReason& r : s.reasons) {
    out += fmt::format("\n{} — {} exits, {} ({:.1f}% of exit time), {} distinct RIPs\n", r.name, r.total.exits,
                       FormatDuration(r.total.time_ns, u), s.time_ns ? 100.0 * r.total.time_ns / s.time_ns : 0.0,
                       r.distinct_rips);
    out += fmt::format("  {:>9} {:>8} {:>11} {:>10}  {:<6} {:<18}  {}\n", "EXITS", "%REASON", "TIME", "MEAN", "SPACE",
                       "RIP", "SYMBOL");
    for (const RipRow& row : r.rips) {
      const RipStat& st = row.stat;
      out +=
          fmt::format("  {:>9} {:>7.1f}% {:>11} {:>10}  {:<6} {:<18}  {}\n", st.exits, 100.0 * st.exits / r.total.exits,
                      FormatDuration(st.time_ns, u), FormatDuration(st.time_ns / st.exits, u), row.space,
                      fmt::format("{:#x}", row.rip), row.named ? row.symbol : "-");
    }
  }
  return out;
}

std::string RenderRipJson(const RipSummary& s, const ReportContext& context,
                          const std::vector<DiagnosticCounter>& diagnostics, bool partial) {
  nlohmann::ordered_json j;
  TagOutput(&j, "rip", kRipJsonSchemaVersion);
  j["kind"] = "exitscope.report.rip";
  j["source"] = context.source;
  j["context"] = ContextJson(context);
  j["symbols"] = s.symbols;
  j["kaslr_slide"] = s.kaslr_slide;
  j["exits"] = s.exits;
  j["time_ns"] = s.time_ns;
  j["time_unit"] = TimeUnitName(s.time_unit);  // of every *_ns value
  j["reasons"] = nlohmann::ordered_json::array();
  for (const RipReason& r : s.reasons) {
    nlohmann::ordered_json rj = {
        {"reason", r.name}, {"isa", IsaName(r.isa)}, {"exits", r.total.exits}, {"time_ns", r.total.time_ns}};
    rj["rips"] = nlohmann::ordered_json::array();
    for (const RipRow& row : r.rips) {
      rj["rips"].push_back({{"rip", fmt::format("{:#x}", row.rip)},
                            {"symbol", row.symbol},
                            {"space", row.space},
                            {"exits", row.stat.exits},
                            {"time_ns", row.stat.time_ns}});
    }
    j["reasons"].push_back(std::move(rj));
  }
  j["diagnostics"] = DiagnosticsJson(diagnostics);
  j["partial"] = partial;
  return j.dump(2) + "\n";
}

}  // namespace exitscope
