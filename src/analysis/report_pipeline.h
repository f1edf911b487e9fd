// The whole `report` flow on one source: events → the driver (exit_driver.h) → ExitAggregator → Report.
// In: an opened KvmEventSource and ReportOptions. Out: a Report with context, totals, groups,
// details and every non-zero Diagnostics counter (the source's and the pairer's).
// Assumption: one pass, memory flat in trace size (nothing per exit is kept).
#pragma once

#include <functional>

#include "analysis/exit_aggregator.h"
#include "analysis/exit_driver.h"
#include "model/report_model.h"
#include "model/event_source.h"

namespace exitscope {

Report BuildReport(KvmEventSource& source, const ReportOptions& options, const ProgressFn& progress = {});

}  // namespace exitscope
