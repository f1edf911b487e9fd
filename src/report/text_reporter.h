// Renders a Report as aligned text tables for a terminal: context header, per-group reason tables
// (count, shares, total time, min/mean/p50/p90/p99/p99.9/max with units), the in-kernel vs VMM split,
// detail breakdowns and the non-zero diagnostics, flagged "PARTIAL RESULT" on any data loss.
#pragma once

#include <string>

#include "base/units.h"  // FormatDuration, for callers of the text reports
#include "model/report_model.h"

namespace exitscope {

struct TextReportOptions {
  bool details = true;
  size_t max_detail_rows_per_kind = 20;
};

std::string RenderTextReport(const Report& report, const TextReportOptions& options = {});

// The report's first line on a partial result, "PARTIAL RESULT: <what was lost> (see diagnostics)"
// and a blank line, for every text output that reports on a trace.
std::string RenderPartialLine(const std::vector<DiagnosticCounter>& diagnostics);

}  // namespace exitscope
