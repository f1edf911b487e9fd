// Renders a Report as one JSON object (schema_version, context, totals, groups, details,
// diagnostics, partial). Durations are integer nanoseconds; fields are added, never renamed,
// within one schema_version.
#pragma once

#include <string>

#include "model/report_model.h"

namespace exitscope {

std::string RenderJsonReport(const Report& report);

}  // namespace exitscope
