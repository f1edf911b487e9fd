// Renders ExitMetrics as a Prometheus exposition: the text format 0.0.4 or OpenMetrics 1.0.0 (the
// scraper's Accept header chooses; `report --openmetrics` writes OpenMetrics for node_exporter's
// textfile collector). Metric names carry the prefix exitscope_ and base units (seconds, bytes).
// In: the metrics (read under the caller's lock), the non-zero diagnostics, the exporter's own
// figures. Out: one exposition text. Assumption: label values are any UTF-8 and are escaped here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "analysis/counted_metrics.h"
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
  // serve's --mode, shown as exitscope_observer_info{mode}; empty (offline): not shown.
  std::string observer_mode;
};

// Series on a host: VMs × (3 × reasons + vCPUs + 1) + CPUs + diagnostics + 6 under serve (build_info,
// observer_info and 4 of the exporter's own; offline + 1, build_info alone); with the histogram also
// VMs × histogram_reasons × 13 (10 bounds, +Inf, _sum, _count).
std::string RenderExposition(const ExitMetrics& metrics, const std::vector<DiagnosticCounter>& diagnostics,
                             const ExporterSelf* self, const ExpositionOptions& options);

// `serve --mode bpf`: the in-kernel counter's series. exits_total{domain,reason}; exit_seconds_total
// {domain,reason} without a stage label (the counter cannot split kernel from VMM time, nor leave out
// a halted vCPU's wait); vmm_trips_total{domain,reason}; vcpu_exits_total; vm_info; with the
// histogram, log2 bounds le = 2^k - 1 ns (k = 8..29): exact for integer nanoseconds. No
// events_lost_total or diagnostics_total: nothing is copied out per event, so nothing is lost or decoded.
std::string RenderLog2Exposition(const Log2ExitMetrics& metrics, const ExporterSelf* self,
                                 const ExpositionOptions& options);
// The `le` bounds of that histogram in nanoseconds, lowest first (2^8 - 1 .. 2^29 - 1).
std::vector<uint64_t> Log2HistogramBoundsNs();

// `serve --mode stats`: KVM's own counters per domain, one family per counter
// (exitscope_kvm_<name>_total; *_ns counters as exitscope_kvm_<name>_seconds_total), per-vCPU exits
// where the stats fds were read (kvm_vcpu_exits_total{domain,vcpu}), and which source each VM's
// figures came from (kvm_stats_source_info{domain,source}). No exit reasons, no handling times.
std::string RenderKvmStatExposition(const KvmStatMetrics& metrics, const ExporterSelf* self,
                                    const ExpositionOptions& options);

std::string_view ExpositionContentType(ExpositionFormat format);
// OpenMetrics when the Accept header offers it (as Prometheus >= 2.5 does), else the text format.
ExpositionFormat ExpositionFormatForAccept(std::string_view accept);

}  // namespace exitscope
