// Renders a Report as aligned text tables for a terminal: context header, per-group reason tables
// (count, shares, total time, min/mean/p50/p90/p99/p99.9/max with units), the in-kernel vs VMM split,
// detail breakdowns and the non-zero diagnostics, flagged "PARTIAL RESULT" on any data loss.
#pragma once

#include <string>

#include "report/report_model.h"

namespace exitscope {

struct TextReportOptions {
  bool details = true;
  size_t max_detail_rows_per_kind = 20;
};

std::string RenderTextReport(const Report& report, const TextReportOptions& options = {});
// "812ns", "3.21us", "45.6ms", "2.301s": 3 significant digits, unit shown. Inside RenderTextReport,
// in the report's time unit.
std::string FormatDuration(uint64_t ns);
std::string FormatDuration(double ns);
// A time in `unit`: as above for ns; else an SI prefix on the unit, "1.23Mcyc", "512cnt", "3.4kraw".
std::string FormatDuration(double v, TimeUnit unit);

}  // namespace exitscope
