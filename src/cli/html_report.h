// `report --html OUT` and `advise --html OUT`: one pass of the report pipeline feeding the report's
// aggregator, the time/latency bins, the RIP tracker (flame graph) and, for advise, its collector;
// then one self-contained page (report/html_page.h) composed of report/html_sections.h.
// In: the command's parsed options. Out: the page in OUT ("-" = stdout); exit code as the command's.
#pragma once

#include <string>

#include "advise/bench_costs.h"
#include "analysis/exit_aggregator.h"
#include "cli/rip_report.h"
#include "pipeline/input_detector.h"

namespace exitscope {

struct HtmlReportRequest {
  std::string path, out;
  InputFormat format = InputFormat::kAuto;
  ReportOptions options;
  Filters filters;  // for the --reason check against the trace's ISA
  unsigned threads = 1;
  ClockOptions clock;
  GuestSymbolArgs symbols;
  bool advise = false;  // add advise's findings (first), as `advise --html`
  const BenchCosts* bench = nullptr;
};

int RunHtmlReport(HtmlReportRequest request);

// Writes `bytes` to `path` ("-" = stdout through WriteStdout): 0, or the error's exit code, printed.
int WriteOutputFile(const std::string& path, const std::string& bytes, const char* what);

}  // namespace exitscope
