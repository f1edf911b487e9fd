// A trace's exits as the metrics `serve` exports live, for `report --openmetrics` and
// `serve --from-trace`: one pass of the one driver into ExitMetrics, VMs named as report --by vm
// names them (analysis/vm_grouper.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/exit_metrics.h"
#include "base/result.h"
#include "model/diagnostics.h"
#include "model/trace_meta.h"

namespace exitscope {

struct TraceMetrics {
  std::unique_ptr<ExitMetrics> metrics;
  std::vector<DiagnosticCounter> diagnostics;  // non-zero, the source's and the pairer's
  bool partial = false;                        // a data-loss or error counter is non-zero
};

// threads > 1: an uncompressed trace.dat or a perf.data file is decoded on that many workers (as
// `report -j`); serve --from-trace reads once at start and keeps the sequential default.
Result<TraceMetrics> MetricsOfTrace(const std::string& path, const ClockOptions& clock, unsigned threads = 1);

}  // namespace exitscope
