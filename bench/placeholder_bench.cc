#include <benchmark/benchmark.h>

#include "model/diagnostics.h"

// Cost of bumping an anomaly counter: it must stay off the per-event hot path.
static void BM_DiagnosticsBump(benchmark::State& state) {
  exitscope::Diagnostics d;
  for (auto _ : state) d.Bump(exitscope::DiagId::kPairLostEntry);
  benchmark::DoNotOptimize(d.Count(exitscope::DiagId::kPairLostEntry));
}
BENCHMARK(BM_DiagnosticsBump);
