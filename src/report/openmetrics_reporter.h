// Renders ExitMetrics as a Prometheus exposition: the text format 0.0.4 or OpenMetrics 1.0.0 (the
// scraper's Accept header chooses; `report --openmetrics` writes OpenMetrics for node_exporter's
// textfile collector). Metric names carry the prefix exitscope_ and base units (seconds, bytes).
// In: the metrics (read under the caller's lock), the non-zero diagnostics, the exporter's own
// figures. Out: one exposition text. Assumption: label values are any UTF-8 and are escaped here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/exit_metrics.h"
#include "model/diagnostics.h"

namespace exitscope {

enum class ExpositionFormat { kPrometheusText, kOpenMetrics };

struct ExporterSelf {      // the exporter's own figures (serve); absent offline
  double cpu_seconds = 0;  // user + system of the process
  uint64_t resident_bytes = 0;
  uint64_t scrapes = 0;  // answered so far, this one included
};

struct ExpositionOptions {
  ExpositionFormat format = ExpositionFormat::kOpenMetrics;
  // exit_duration_seconds for the reasons with the most exits (over all VMs); 0: no histogram.
  size_t histogram_reasons = 0;
};

// Series on a host: VMs × (3 × reasons + vCPUs + 1) + CPUs + diagnostics + 5; with the histogram
// also VMs × histogram_reasons × 13 (10 bounds, +Inf, _sum, _count).
std::string RenderExposition(const ExitMetrics& metrics, const std::vector<DiagnosticCounter>& diagnostics,
                             const ExporterSelf* self, const ExpositionOptions& options);

std::string_view ExpositionContentType(ExpositionFormat format);
// OpenMetrics when the Accept header offers it (as Prometheus >= 2.5 does), else the text format.
ExpositionFormat ExpositionFormatForAccept(std::string_view accept);

}  // namespace exitscope
