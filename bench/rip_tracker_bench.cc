// `report --by rip` and `--folded` with many distinct guest RIPs (issue 19: linear in RIPs as in
// threads). Synthetic ExitSamples, one exit per RIP, spread over 4 vCPU threads of one VM, straight
// into RipTracker, then the per-reason summary (top 20 RIPs) and the folded stacks. Time per RIP
// must stay flat from 64k to 1M; peak RSS is reported.
#include <benchmark/benchmark.h>

#include "analysis/rip_tracker.h"
#include "decode/exit_reason_codes.h"
#include "bench_util.h"

namespace exitscope {
namespace {

void BM_RipTrackerDistinctRips(benchmark::State& state) {
  const auto rips = static_cast<uint64_t>(state.range(0));
  constexpr int32_t kFirstTid = 1000;
  constexpr uint64_t kUserBase = 0x400000;  // user space: no kernel symbol lookup
  TraceMeta meta;
  for (int32_t v = 0; v < 4; ++v) meta.comm_by_tid[kFirstTid + v] = "CPU " + std::to_string(v) + "/KVM";
  GuestSymbolizer hex;
  size_t distinct = 0, folded = 0;
  for (auto _ : state) {
    RipTracker tracker(meta, RipFilter{});
    ExitSample s;
    s.isa = Isa::kVmx;
    s.reason = kVmxEptViolation;  // the reason whose RIPs spread widest in real traces
    s.dur_ns = 1000;
    for (uint64_t i = 0; i < rips; ++i) {
      s.tid = kFirstTid + static_cast<int32_t>(i & 3);
      s.vcpu_id = static_cast<int32_t>(i & 3);
      s.ts_ns = 1000 * i;
      s.rip = kUserBase + 16 * i;
      tracker.OnExitSample(s);
    }
    RipSummary summary = tracker.Summarize(hex, 20);
    distinct = summary.reasons.empty() ? 0 : summary.reasons.front().distinct_rips;
    folded = tracker.Folded(hex).size();
    benchmark::DoNotOptimize(distinct);
    benchmark::DoNotOptimize(folded);
  }
  if (distinct != rips) state.SkipWithError("wrong number of distinct RIPs");
  if (folded != rips) state.SkipWithError("wrong number of folded stacks");
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * rips));
  ReportPeakRss(state);
}
BENCHMARK(BM_RipTrackerDistinctRips)->Arg(1 << 16)->Arg(1 << 18)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace exitscope
