// The pull interfaces between stages. A KvmEventSource yields typed KVM events in time order; every
// reader (trace.dat, perf.data, text) ends in one, so every analysis reads every format.
// In: an opened input. Out: Next() until it returns false; Diagnostics for anything skipped or lost.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/diagnostics.h"
#include "model/kvm_event.h"
#include "base/result.h"
#include "model/trace_meta.h"

namespace exitscope {

// A lost-events marker: the ring buffer (or perf) dropped `count` events on `cpu` before ts_ns
// (count 0 = an unknown number). Pairers reset state on that CPU / thread.
struct LostEvents {
  int32_t cpu = -1;
  uint64_t ts_ns = 0;
  uint64_t count = 0;
};

// A loss marker seen after `acc` with no event between them: the same CPU's counts add up, another
// CPU's marker replaces it (how a marker on a skipped record reaches the next event).
inline void CombineLost(LostEvents* acc, LostEvents l) {
  if (l.cpu < 0) return;
  if (acc->cpu >= 0 && acc->cpu == l.cpu) l.count += acc->count;
  *acc = l;
}

// A loss marker handed out with events[index] of a batch (the marker Next would give with it).
struct LossAt {
  uint32_t index = 0;
  LostEvents lost;
};

// A run of events in time order, read in place; valid until the source is called again. A source
// whose events lie where it decoded them, not in time order (the perf.data rounds: decoded per
// chunk, then merged), hands pointers to them (`refs`) instead of copying each into a run.
struct KvmEventBatch {
  std::span<const KvmEvent> events;       // the run, when refs is empty
  std::span<const KvmEvent* const> refs;  // else the events, one pointer each
  std::span<const LossAt> losses;         // by index, at most one per event

  size_t size() const { return refs.empty() ? events.size() : refs.size(); }
  const KvmEvent& operator[](size_t i) const { return refs.empty() ? events[i] : *refs[i]; }
  const KvmEvent& front() const { return (*this)[0]; }
  const KvmEvent& back() const { return (*this)[size() - 1]; }
};

// Events a source that decodes into a buffer hands per batch: a few tens of KB, warm when consumed.
inline constexpr size_t kKvmEventBatchSize = 512;

// Each event of `batch` in order, with the loss marker that precedes it (nullptr when none): what
// Next would have handed one call at a time.
template <typename Fn>  // void(const KvmEvent&, const LostEvents* lost)
inline void ForEachEvent(const KvmEventBatch& batch, Fn&& fn) {
  size_t loss = 0;
  auto each = [&](const auto& events, const auto& deref) {  // one loop per kind: no test per event
    for (size_t i = 0; i < events.size(); ++i) {
      const bool lost = loss < batch.losses.size() && batch.losses[loss].index == i;
      fn(deref(events[i]), lost ? &batch.losses[loss++].lost : nullptr);
    }
  };
  if (batch.refs.empty()) {
    each(batch.events, [](const KvmEvent& e) -> const KvmEvent& { return e; });
  } else {
    each(batch.refs, [](const KvmEvent* e) -> const KvmEvent& { return *e; });
  }
}

class KvmEventSource {
 public:
  virtual ~KvmEventSource() = default;
  virtual const TraceMeta& meta() const = 0;
  // Next event in time order; false at the end. A loss marker, when one precedes the event, is
  // reported through *lost (lost->cpu >= 0) with the event; callers pass nullptr to ignore.
  virtual bool Next(KvmEvent* event, LostEvents* lost) = 0;
  // The same events and markers as Next, a run at a time (one caller uses one of the two): the hot
  // loop of a report then costs no call and no copy per event. False at the end (batch empty).
  // The default fills a buffer through Next; a source holding decoded runs hands them in place.
  virtual bool NextBatch(KvmEventBatch* batch);
  virtual Diagnostics& diagnostics() = 0;
  // Bytes consumed and total, for progress on long inputs (0/0 when unknown).
  virtual uint64_t bytes_done() const { return 0; }
  virtual uint64_t bytes_total() const { return 0; }

 private:
  std::vector<KvmEvent> batch_events_;  // the default NextBatch's buffers
  std::vector<LossAt> batch_losses_;
};

}  // namespace exitscope
