// Shared by the benchmarks in bench/: the counters every memory-bound benchmark reports.
#pragma once

#include <benchmark/benchmark.h>

#include <sys/resource.h>

namespace exitscope {

// The process's peak resident set so far, as the "peak_rss_MiB" counter (getrusage ru_maxrss, KiB).
inline void ReportPeakRss(benchmark::State& state) {
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  state.counters["peak_rss_MiB"] = static_cast<double>(ru.ru_maxrss) / 1024.0;
}

}  // namespace exitscope
