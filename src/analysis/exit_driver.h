// The one pipeline driver (issue 13): a KvmEventSource's events, in time order, go through one
// ExitPairer to the exit sink of a command (the report's aggregator, the RIP tracker, advise's
// collector …), with one progress rule. Commands do not write their own event loop.
// In: an opened source (any format; batches read in place), the sink, where the pairer's diagnostics
// go. Out: the sink's OnExitSample / OnUntimedExit calls, and what the run saw (ExitRun).
// Assumption: the sink is cheap per exit; an event tap that wants every event (not only exits) costs a
// virtual call per event and is for commands that need one. DriveEvents serves a command that shows
// events rather than exits.
#pragma once

#include <cstdint>
#include <functional>

#include "analysis/exit_pairer.h"
#include "model/event_source.h"

namespace exitscope {

class RawEventSource;
struct RawEvent;

// Called every few hundred thousand events with bytes_done / bytes_total of the source.
using ProgressFn = std::function<void(uint64_t done, uint64_t total)>;

// Sees every kvm event, before the pairer does (advise keeps the kvm_apic access of each thread).
class KvmEventTap {
 public:
  virtual ~KvmEventTap() = default;
  virtual void OnKvmEvent(const KvmEvent& event) = 0;
};

struct DriveOptions {
  ProgressFn progress;                                 // none: silent
  KvmEventTap* tap = nullptr;                          // none: exits only
  std::function<void(uint64_t first_ts_ns)> on_start;  // before the first event reaches the pairer
  std::function<void(const LostEvents&)> on_lost;      // each loss marker, after the pairer saw it
};

// What the run saw, for the context block of every output.
struct ExitRun {
  uint64_t events = 0;                       // kvm events read
  uint64_t first_ts_ns = 0, last_ts_ns = 0;  // of the first / last kvm event
  Isa isa_seen = Isa::kUnknown;              // of the first kvm_exit
  PairerCounts pairs;
};

// Reads `source` to its end through one ExitPairer into `sink`; the pairer's counters go to
// `pair_diagnostics`.
ExitRun DriveExits(KvmEventSource& source, ExitSampleSink* sink, Diagnostics* pair_diagnostics,
                   const DriveOptions& options = {});

// The same read loop for a command that shows every event instead of exits (`dump`): no pairing,
// one event per source call (a stop reads nothing further, so the source's counters cover what was
// shown), the progress rule of DriveExits. The visitor returns false to stop (a --limit reached,
// the output closed); `lost` is the loss marker before the event, nullptr when none.
using KvmEventVisitor = std::function<bool(const KvmEvent& event, const LostEvents* lost)>;
using RawEventVisitor = std::function<bool(const RawEvent& event, const LostEvents* lost)>;
void DriveEvents(KvmEventSource& source, const KvmEventVisitor& visit, const ProgressFn& progress = {});
// Every record of a binary source, undecoded: all events, not only kvm ones.
void DriveEvents(RawEventSource& source, const RawEventVisitor& visit, const ProgressFn& progress = {});

}  // namespace exitscope
