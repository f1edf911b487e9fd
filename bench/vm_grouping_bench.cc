// --by vm with many distinct host threads (issue 19: labelling each VM scanned every thread, so
// 16k threads took 3.9 s and 100k never finished). Synthetic ExitSamples, one exit per thread,
// straight into ExitAggregator and Fill: half the threads are QEMU vCPU threads by name ("CPU 0/KVM",
// one VM each), half lone threads without a comm. Time per thread must stay flat from 64k to 1M.
#include <benchmark/benchmark.h>

#include "analysis/exit_aggregator.h"
#include "decode/exit_reason_codes.h"
#include "bench_util.h"

namespace exitscope {
namespace {

void BM_AggregateByVmDistinctThreads(benchmark::State& state) {
  const auto threads = static_cast<int32_t>(state.range(0));
  constexpr int32_t kFirstTid = 1000;
  TraceMeta meta;
  for (int32_t tid = kFirstTid; tid < kFirstTid + threads; tid += 2) meta.comm_by_tid[tid] = "CPU 0/KVM";
  ReportOptions options;
  options.by = GroupBy::kVm;
  size_t groups = 0;
  for (auto _ : state) {
    ExitAggregator agg(meta, options);
    ExitSample s;
    s.isa = Isa::kVmx;
    s.reason = kVmxHlt;
    s.dur_ns = 1000;
    for (int32_t i = 0; i < threads; ++i) {
      s.tid = kFirstTid + i;
      s.ts_ns = 1000ull * i;
      agg.OnExitSample(s);
    }
    Report report;
    agg.Fill(&report);
    groups = report.groups.size();
    benchmark::DoNotOptimize(groups);
  }
  if (groups != static_cast<size_t>(threads)) state.SkipWithError("wrong number of VM groups");
  state.SetItemsProcessed(state.iterations() * threads);
  ReportPeakRss(state);
}
BENCHMARK(BM_AggregateByVmDistinctThreads)->Arg(1 << 16)->Arg(1 << 18)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace exitscope
