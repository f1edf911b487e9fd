// Time-orders perf.data's tracepoint samples. perf writes each CPU's mmap buffer in turn, so records
// are only roughly time-ordered; like perf's own ordered_events, we buffer a round's records and,
// at each PERF_RECORD_FINISHED_ROUND, emit those not later than the newest timestamp seen before the
// previous round marker (no later record can precede them). Files without round markers are sorted
// whole at the end. In: a PerfDataFile. Out: samples with a RAW payload, and loss markers, in time
// order. A file's records are read with pread(2) into a window that keeps every record not handed
// out yet (the rounds' bytes, not the whole file): no page of the mapping is touched, each of which
// cost ~2 us on first access on the PVM guests here even when mapped in ahead (MAP_POPULATE). Pipe
// input and fuzzers' bytes are read in place. Payloads are spans into the window or the input (no
// per-event allocation — the pending buffer is reused across rounds).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/huge_pages.h"
#include "model/diagnostics.h"
#include "model/event_source.h"
#include "sources/perfdata/perfdata_reader.h"

namespace exitscope {

struct PerfTimedSample {
  uint64_t ts_ns = 0;
  int32_t cpu = -1;
  int32_t tid = -1;
  std::span<const uint8_t> raw;  // tracepoint record (common_type first)
};

class PerfSampleStream {
 public:
  PerfSampleStream(const PerfDataFile* file, Diagnostics* diagnostics);
  // Next sample in time order; false at the end. Loss seen since the previous sample is reported
  // through *lost (lost->cpu >= 0) with the sample; *lost is left untouched otherwise.
  bool Next(PerfTimedSample* out, LostEvents* lost);
  uint64_t bytes_done() const { return pos_; }
  // Samples whose type id maps to 1 (RawEventSource::LeaveOut) are not queued: counted, and their
  // time span kept, here. A loss marker read before one goes with the next sample handed out,
  // summed with any later marker, as markers between two samples always are.
  void LeaveOut(std::vector<uint8_t> type_ids) { left_out_ids_ = std::move(type_ids); }
  uint64_t left_out() const { return left_out_; }
  uint64_t left_out_first_ts_ns() const { return left_out_first_ts_ns_; }
  uint64_t left_out_last_ts_ns() const { return left_out_last_ts_ns_; }

 private:
  struct Pending {
    uint64_t ts_ns;
    uint64_t offset;  // of the record inside data(): ties keep file order
    int32_t cpu;
    int32_t tid;
    uint32_t raw_size;  // kLostMarker for a loss record
    uint32_t raw_off;   // raw payload offset inside the record
  };
  static constexpr uint32_t kLostMarker = 0xffffffffu;
  // Reads records up to the next round marker (or the end); returns false when nothing is left.
  bool Refill();
  void ReadRound();  // the records of one round into pending_
  void AddSample(std::span<const uint8_t> body, const uint8_t* record);
  void ReleaseSorted();               // sorts pending_ and marks what no later record can precede
  void ReleasePages(uint64_t below);  // in place: drops data()'s pages below `below` (8 MB steps)
  uint64_t LowestPending() const;     // where the lowest record not handed out lies (pos_ if none)
  static constexpr uint64_t kReleaseBytes = 8 << 20;
  // data()[pos, pos + size), which lies inside data(): in place, or read into window_ (reading on
  // when it lies past what was read; what lies below keep_ may be dropped then).
  const uint8_t* At(uint64_t pos, size_t size) {
    if (!read_) return file_->data().data() + pos;
    if (pos + size > window_end_) ReadOn(pos + size);
    return window_.data() + (pos - window_begin_);
  }
  void ReadOn(uint64_t to);
  static constexpr uint64_t kReadBytes = 1 << 20;  // read at a time

  const PerfDataFile* file_;
  Diagnostics* diagnostics_;
  const bool read_;             // a file: records read into window_ (pipe input and bytes in memory: in place)
  HugeVector<uint8_t> window_;  // data()[window_begin_, window_end_), then room to read on
  uint64_t window_begin_ = 0, window_end_ = 0;
  uint64_t keep_ = 0;  // no pending record lies below this: bytes below it may be dropped
  size_t pos_ = 0;
  uint64_t released_ = 0;    // data() below this was released from the resident set
  uint64_t prefaulted_ = 0;  // data() below this was mapped in ahead of the walk (Prefault)
  HugeVector<Pending> pending_;
  std::vector<Pending> scratch_;  // SortAscendingRuns's, kept across rounds
  size_t ready_begin_ = 0, ready_end_ = 0;
  uint64_t flush_limit_ns_ = 0;  // records at or before this time may be emitted
  bool have_flush_limit_ = false;
  uint64_t max_ts_ns_ = 0;  // newest timestamp read so far
  uint64_t last_emitted_ns_ = 0;
  LostEvents pending_lost_;  // loss read since the last emitted sample
  std::vector<uint8_t> left_out_ids_;
  uint64_t left_out_ = 0;
  uint64_t left_out_first_ts_ns_ = UINT64_MAX, left_out_last_ts_ns_ = 0;
};

}  // namespace exitscope
