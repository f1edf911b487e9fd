// k-way merge of per-CPU record streams into one time-ordered stream (the `sort` stage).
// In: one CpuRecordStream per CPU, each already in time order as the ring buffer wrote it.
// Out: RawEvents by (ts_ns, stream index); a record older than the last one emitted (a CPU
// whose clock stepped back) is passed on and counted, never dropped.
// Assumption: few streams (1–8 typical, 256 allowed): a linear scan beats a heap up to ~8.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "model/raw_event.h"

namespace exitscope {

class CpuMerger {
 public:
  void Add(std::unique_ptr<CpuRecordStream> stream);
  // Next record in time order; its payload stays valid until the next call. A loss marker that
  // precedes the record is copied to *lost (lost->cpu = -1 otherwise; lost may be null).
  bool Next(RawEvent* event, LostEvents* lost);
  uint64_t out_of_order() const { return out_of_order_; }
  size_t stream_count() const { return streams_.size(); }

 private:
  void Prime();
  void HeapDown(size_t i);
  bool Less(uint32_t a, uint32_t b) const;

  std::vector<std::unique_ptr<CpuRecordStream>> streams_;
  std::vector<uint32_t> live_;  // streams with a head; a min-heap when large
  int64_t pending_ = -1;        // stream whose head was handed out last: advanced lazily
  bool primed_ = false;
  uint64_t last_ts_ = 0;
  uint64_t out_of_order_ = 0;
};

}  // namespace exitscope
