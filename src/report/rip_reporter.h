// Renders `report --by rip` (analysis/rip_tracker.h RipSummary): a text table per reason with its top
// guest RIPs, and JSON "exitscope.rip/1" with the shared context block (report/json_context.h).
#pragma once

#include <string>

#include "analysis/rip_tracker.h"
#include "model/report_model.h"

namespace exitscope {

inline constexpr int kRipJsonSchemaVersion = 1;

std::string RenderRipText(const RipSummary& summary, const std::string& source);
std::string RenderRipJson(const RipSummary& summary, const ReportContext& context,
                          const std::vector<DiagnosticCounter>& diagnostics, bool partial);

}  // namespace exitscope
