// Events per second of the full report pipeline (pair → aggregate → Report), and of advise's
// collector, on real decoded events:
// dual-5000/trace.dat is decoded once into memory, then replayed with shifted time until >= 10M
// events, so the figure is the analysis stage alone (the reader has its own benchmark).
#include <benchmark/benchmark.h>

#include <vector>

#include "advise/exit_collector.h"
#include "analysis/report_pipeline.h"
#include "model/event_source.h"
#include "pipeline/input_detector.h"
#include "bench_util.h"

namespace exitscope {
namespace {

class ReplaySource : public KvmEventSource {
 public:
  ReplaySource(const std::vector<KvmEvent>& events, const TraceMeta& meta, uint64_t total)
      : events_(events), meta_(meta), total_(total) {
    span_ns_ = events_.back().ts_ns - events_.front().ts_ns + 1000;
  }
  const TraceMeta& meta() const override { return meta_; }
  bool Next(KvmEvent* e, LostEvents*) override {
    if (done_ == total_) return false;
    *e = events_[i_];
    e->ts_ns += shift_;
    ++done_;
    if (++i_ == events_.size()) {
      i_ = 0;
      shift_ += span_ns_;
    }
    return true;
  }
  Diagnostics& diagnostics() override { return diagnostics_; }

 private:
  const std::vector<KvmEvent>& events_;
  const TraceMeta& meta_;
  Diagnostics diagnostics_;
  uint64_t total_, done_ = 0, shift_ = 0, span_ns_ = 0;
  size_t i_ = 0;
};

struct Decoded {
  std::vector<KvmEvent> events;
  TraceMeta meta;
};

const Decoded& Dual5000() {
  static Decoded d = [] {
    Decoded out;
    auto src = OpenKvmEventSource(std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/dual-5000/trace.dat");
    if (!src.ok()) return out;
    KvmEvent e;
    while ((*src)->Next(&e, nullptr)) out.events.push_back(e);
    out.meta = (*src)->meta();
    return out;
  }();
  return d;
}

// Events each benchmark replays.
constexpr uint64_t kEvents = 10'000'000;

// The decoded trace, or nullptr with `state` marked skipped when it cannot be read.
const Decoded* DecodedOrSkip(benchmark::State& state) {
  const Decoded& d = Dual5000();
  if (!d.events.empty()) return &d;
  state.SkipWithError("dual-5000/trace.dat not readable");
  return nullptr;
}

void BM_ReportPipeline(benchmark::State& state) {
  const Decoded* d = DecodedOrSkip(state);
  if (!d) return;
  ReportOptions options;
  options.by = static_cast<GroupBy>(state.range(0));
  for (auto _ : state) {
    ReplaySource src(d->events, d->meta, kEvents);
    Report r = BuildReport(src, options);
    benchmark::DoNotOptimize(r.totals.timed);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kEvents));
  ReportPeakRss(state);
}
BENCHMARK(BM_ReportPipeline)
    ->Arg(static_cast<int>(GroupBy::kReason))
    ->Arg(static_cast<int>(GroupBy::kVcpu))
    ->Unit(benchmark::kMillisecond);

// advise's collector on the same replayed events (pair → keep → every rule's bounded summary): the
// consumer that makes `advise` slower than `report` on the reading thread (issue 18 wants 1.5×).
void BM_AdviseCollect(benchmark::State& state) {
  const Decoded* d = DecodedOrSkip(state);
  if (!d) return;
  for (auto _ : state) {
    ReplaySource src(d->events, d->meta, kEvents);
    ExitProfile p = CollectExits(&src);
    benchmark::DoNotOptimize(p.exits);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kEvents));
  ReportPeakRss(state);
}
BENCHMARK(BM_AdviseCollect)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace exitscope
