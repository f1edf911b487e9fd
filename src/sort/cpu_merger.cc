#include "sort/cpu_merger.h"

#include <algorithm>

namespace exitscope {
namespace {
// Up to this many streams a linear scan of the heads is cheaper than keeping a heap.
constexpr size_t kLinearScanMax = 8;

// Copies a stream's head field by field, on purpose: Advance() has just written those fields with
// narrow stores, and a wide (vector) load spanning several of them misses store-to-load forwarding —
// that one stall was over half of the merger's time. The empty asm keeps the compiler from merging
// the copies back into vector moves.
inline void CopyHead(const RawEvent& head, RawEvent* out) {
  uint64_t ts_ns = head.ts_ns;
  int32_t cpu = head.cpu, tid = head.tid;
  uint16_t type_id = head.type_id;
  const uint8_t* data = head.payload.data();
  size_t size = head.payload.size();
  asm volatile("" : "+r"(ts_ns), "+r"(cpu), "+r"(tid), "+r"(type_id), "+r"(data), "+r"(size));
  out->ts_ns = ts_ns;
  out->cpu = cpu;
  out->tid = tid;
  out->type_id = type_id;
  out->payload = std::span<const uint8_t>(data, size);
}
}  // namespace

void CpuMerger::Add(std::unique_ptr<CpuRecordStream> stream) { streams_.push_back(std::move(stream)); }

bool CpuMerger::Less(uint32_t a, uint32_t b) const {
  uint64_t ta = streams_[a]->head.ts_ns, tb = streams_[b]->head.ts_ns;
  return ta < tb || (ta == tb && a < b);
}

void CpuMerger::HeapDown(size_t i) {
  size_t n = live_.size();
  while (true) {
    size_t l = 2 * i + 1, best = i;
    if (l < n && Less(live_[l], live_[best])) best = l;
    if (l + 1 < n && Less(live_[l + 1], live_[best])) best = l + 1;
    if (best == i) return;
    std::swap(live_[i], live_[best]);
    i = best;
  }
}

void CpuMerger::Prime() {
  primed_ = true;
  for (uint32_t i = 0; i < streams_.size(); ++i) {
    if (streams_[i]->Advance()) live_.push_back(i);
  }
  if (live_.size() > kLinearScanMax) {
    for (size_t i = live_.size() / 2 + 1; i-- > 0;) HeapDown(i);
  }
}

bool CpuMerger::Next(RawEvent* event, LostEvents* lost) {
  if (!primed_) Prime();
  if (live_.size() == 1) {
    // One live stream (a single-CPU trace, or the others ran dry): no comparisons, no search.
    CpuRecordStream& s = *streams_[live_[0]];
    if (pending_ >= 0) {
      s.lost.cpu = -1;
      if (!s.Advance()) {
        live_.clear();
        pending_ = -1;
        return false;
      }
    }
    CopyHead(s.head, event);
    if (lost) *lost = s.lost;
    if (event->ts_ns < last_ts_)
      ++out_of_order_;
    else
      last_ts_ = event->ts_ns;
    pending_ = live_[0];
    return true;
  }
  const bool heap = live_.size() > kLinearScanMax;
  if (pending_ >= 0) {
    // Advance the stream handed out last time only now, so that record's payload stayed valid.
    CpuRecordStream& s = *streams_[pending_];
    s.lost.cpu = -1;
    bool more = s.Advance();
    size_t pos = heap ? 0 : std::find(live_.begin(), live_.end(), pending_) - live_.begin();
    if (!more) {
      live_[pos] = live_.back();
      live_.pop_back();
    }
    if (heap && !live_.empty()) HeapDown(pos);
    pending_ = -1;
  }
  if (live_.empty()) return false;
  uint32_t best;
  if (live_.size() > kLinearScanMax) {
    best = live_[0];
  } else {
    best = live_[0];
    for (size_t i = 1; i < live_.size(); ++i) {
      if (Less(live_[i], best)) best = live_[i];
    }
  }
  CpuRecordStream& s = *streams_[best];
  CopyHead(s.head, event);
  if (lost) *lost = s.lost;
  if (event->ts_ns < last_ts_)
    ++out_of_order_;
  else
    last_ts_ = event->ts_ns;
  pending_ = best;
  return true;
}

}  // namespace exitscope
