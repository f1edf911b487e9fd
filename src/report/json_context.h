// The head every trace-reading JSON output shares (issue 13: one context block): "schema",
// "schema_version", "tool", "tool_version", then "context" (the trace: source, format, kernel, clock,
// span, time unit, VMs, filters), and at the end "diagnostics" (every non-zero counter) and "partial".
// In: a ReportContext (analysis/report_pipeline.h BuildContext) and the run's counters. Out: JSON
// pieces the reporters place. Fields are added, never renamed, within one schema_version.
#pragma once

#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/diagnostics.h"
#include "model/report_model.h"

namespace exitscope {

// "schema", "schema_version", "tool", "tool_version".
void TagOutput(nlohmann::ordered_json* j, std::string_view command, int version);
void TagOutput(nlohmann::json* j, std::string_view command, int version);

nlohmann::ordered_json ContextJson(const ReportContext& context);
nlohmann::ordered_json DiagnosticsJson(const std::vector<DiagnosticCounter>& counters);

}  // namespace exitscope
