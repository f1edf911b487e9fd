#include "analysis/exit_driver.h"

#include "sources/raw_event_source.h"

namespace exitscope {
namespace {

constexpr uint64_t kProgressEvery = 1 << 18;  // events between progress callbacks

// One event per Next, its loss marker (cleared before each call) passed along when there is one.
template <typename Source, typename Event, typename Visitor>
void DriveOneByOne(Source& source, const Visitor& visit, const ProgressFn& progress) {
  Event event;
  LostEvents lost;
  for (uint64_t read = 1;; ++read) {
    lost = LostEvents{};
    if (!source.Next(&event, &lost)) return;
    if (progress && read % kProgressEvery == 0) progress(source.bytes_done(), source.bytes_total());
    if (!visit(event, lost.cpu >= 0 ? &lost : nullptr)) return;
  }
}

}  // namespace

ExitRun DriveExits(KvmEventSource& source, ExitSampleSink* sink, Diagnostics* pair_diagnostics,
                   const DriveOptions& options) {
  ExitRun run;
  ExitPairer pairer(source.meta(), pair_diagnostics, sink);
  KvmEventBatch batch;
  uint64_t next_progress = kProgressEvery;
  while (source.NextBatch(&batch)) {
    if (run.events == 0) {
      run.first_ts_ns = batch.front().ts_ns;
      if (options.on_start) options.on_start(run.first_ts_ns);
    }
    if (run.isa_seen == Isa::kUnknown) {
      for (size_t i = 0; i < batch.size(); ++i) {
        if (batch[i].kind == EventKind::kExit) {
          run.isa_seen = batch[i].isa;
          break;
        }
      }
    }
    auto on_lost = [&](const LostEvents& lost) {
      pairer.OnLost(lost);
      if (options.on_lost) options.on_lost(lost);
    };
    // Two loops, so that a run without a tap does not test for one on every event.
    if (options.tap) {
      ForEachEvent(batch, [&](const KvmEvent& e, const LostEvents* lost) {
        if (lost) on_lost(*lost);
        options.tap->OnKvmEvent(e);
        pairer.OnEvent(e);
      });
    } else {
      ForEachEvent(batch, [&](const KvmEvent& e, const LostEvents* lost) {
        if (lost) on_lost(*lost);
        pairer.OnEvent(e);
      });
    }
    run.events += batch.size();
    run.last_ts_ns = batch.back().ts_ns;
    if (options.progress && run.events >= next_progress) {
      options.progress(source.bytes_done(), source.bytes_total());
      next_progress = run.events + kProgressEvery;
    }
  }
  pairer.Finish();
  run.pairs = pairer.counts();
  return run;
}

void DriveEvents(KvmEventSource& source, const KvmEventVisitor& visit, const ProgressFn& progress) {
  DriveOneByOne<KvmEventSource, KvmEvent>(source, visit, progress);
}

void DriveEvents(RawEventSource& source, const RawEventVisitor& visit, const ProgressFn& progress) {
  DriveOneByOne<RawEventSource, RawEvent>(source, visit, progress);
}

}  // namespace exitscope
