// The sections `report --html` and `advise --html` compose (html_page.h says how to add one). Their
// numbers come from the models the JSON outputs print: the report's sections carry RenderJsonReport's
// document, advise's RenderAdviceJson's, with every *_ns value also spelled by FormatDuration
// (*_text); the charts carry ExitBinner's bins (the report's accepted exits) and the RIP tracker's
// folded stacks.
// In: a Report, the binner and folded rows of the same pass, an Advice. Out: HtmlSections.
#pragma once

#include <vector>

#include "advise/advisor.h"
#include "analysis/exit_bins.h"
#include "analysis/rip_tracker.h"
#include "model/diff_model.h"
#include "model/report_model.h"
#include "report/html_page.h"

namespace exitscope {

// Adds "<key>_text" beside every numeric "*_ns" member of `j` (recursively), in `unit`.
void AddDurationTexts(nlohmann::json* j, TimeUnit unit);

HtmlSection ContextSection(const Report& report);                   // context, totals, diagnostics
HtmlSection ReasonsSection(const Report& report);                   // per group: exits and time per reason, VMM split
HtmlSection LatencySection(const ExitBinner& bins, TimeUnit unit);  // log-axis histograms, p50/p99/p99.9
HtmlSection RateSection(const ExitBinner& bins);                    // exits/s per VM and vCPU over the trace
HtmlSection FlameSection(const std::vector<FoldedRow>& rows, const std::string& symbols, TimeUnit unit);
HtmlSection DetailsSection(const Report& report);  // MSR, port, MMIO … breakdowns
// `diff --html`: the verdict, both sides' context, and every reason and detail row before -> after
// (the diff JSON document, durations spelled).
HtmlSection DiffSection(const DiffReport& diff);
HtmlSection FindingsSection(const Advice& advice, const Report& report);  // advise's findings

// The VM / vCPU / reason choices of the page's filter bar, from the bins' threads.
nlohmann::json FilterChoices(const ExitBinner& bins);

}  // namespace exitscope
