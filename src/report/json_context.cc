#include "report/json_context.h"

#include "base/json_schema.h"

namespace exitscope {
namespace {

template <typename Json>
void Tag(Json* j, std::string_view command, int version) {
  TagSchema(j, command, version);
  (*j)["tool"] = "exitscope";
  (*j)["tool_version"] = EXITSCOPE_VERSION;
}

}  // namespace

void TagOutput(nlohmann::ordered_json* j, std::string_view command, int version) { Tag(j, command, version); }
void TagOutput(nlohmann::json* j, std::string_view command, int version) { Tag(j, command, version); }

nlohmann::ordered_json ContextJson(const ReportContext& c) {
  return {{"source", c.source},
          {"format", c.format},
          {"kernel", c.kernel},
          {"isa", c.isa},
          {"clock", c.clock},
          {"cpu_description", c.cpu_description},
          {"cpu_count", c.cpu_count},
          {"first_ts_ns", c.first_ts_ns},
          {"last_ts_ns", c.last_ts_ns},
          {"duration_ns", c.last_ts_ns - c.first_ts_ns},
          // Every *_ns value of the document is in this unit ("cycles": TSC cycles).
          {"time_unit", TimeUnitName(c.time_unit)},
          {"clock_notes", c.clock_notes},
          {"vms", c.vms},
          {"vcpu_threads", c.vcpu_threads},
          {"filters", c.filters}};
}

nlohmann::ordered_json DiagnosticsJson(const std::vector<DiagnosticCounter>& counters) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& d : counters) {
    out.push_back({{"name", d.name},
                   {"severity", std::string(SeverityName(d.severity))},
                   {"count", d.count},
                   {"description", d.description}});
  }
  return out;
}

}  // namespace exitscope
