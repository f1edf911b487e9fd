// Undecoded records from the binary sources (trace.dat ring-buffer pages, perf.data RAW samples), in
// time order after the per-CPU merge. Decoding is deferred (Perfetto's tokenizer idea): the hot loop
// touches only timestamp and type id; kvm_decoder reads the fields an analysis needs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "model/event_source.h"

namespace exitscope {

struct RawEvent {
  uint64_t ts_ns = 0;
  int32_t cpu = -1;
  int32_t tid = -1;                  // perf sample tid; trace.dat: common_pid of the payload
  uint16_t type_id = 0;              // common_type
  std::span<const uint8_t> payload;  // the whole record starting at common_type
};

// One CPU's records in time order, as its ring buffer (or perf's per-CPU stream) wrote them: what
// the sources cut bytes into and the sort stage merges.
class CpuRecordStream {
 public:
  virtual ~CpuRecordStream() = default;
  // Moves to the next record; false at the end. May invalidate the previous head's payload.
  virtual bool Advance() = 0;
  RawEvent head;    // valid after Advance() returned true
  LostEvents lost;  // lost.cpu >= 0 when the ring buffer dropped events right before head
};

}  // namespace exitscope
