// Renders an Advice: a text page for humans (biggest saving first, each finding with evidence, what
// its fix removes, RIPs and the fix; minor findings after; then what was checked and not flagged)
// and a JSON document with a schema version.
#pragma once

#include <string>

#include "advise/advisor.h"
#include "model/diagnostics.h"
#include "model/report_model.h"

namespace exitscope {

// 2: untimed exits counted (timed_exits beside exits), null for what is unknown (unpriced savings,
// untimed times), removes / priced_from / minor / rank per finding, partial, bench.
inline constexpr int kAdviseJsonSchemaVersion = 2;

std::string RenderAdviceText(const Advice& advice, const std::string& source);
// `context` and `diagnostics`: the shared context block (report/json_context.h).
std::string RenderAdviceJson(const Advice& advice, const ReportContext& context,
                             const std::vector<DiagnosticCounter>& diagnostics);

}  // namespace exitscope
