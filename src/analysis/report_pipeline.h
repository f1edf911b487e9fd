// The whole `report` flow on one source: events → ExitPairer → ExitAggregator → Report.
// In: an opened KvmEventSource and ReportOptions. Out: a Report with context, totals, groups,
// details and every non-zero Diagnostics counter (the source's and the pairer's).
// Assumption: one pass, memory flat in trace size (nothing per exit is kept).
#pragma once

#include <functional>

#include "analysis/exit_aggregator.h"
#include "model/report_model.h"
#include "model/event_source.h"

namespace exitscope {

// Called every few hundred thousand events with bytes_done / bytes_total of the source.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

Report BuildReport(KvmEventSource& source, const ReportOptions& options, const ProgressFn& progress = {});

}  // namespace exitscope
