// Undecoded records from the binary sources (trace.dat ring-buffer pages, perf.data RAW samples), in
// time order after the per-CPU merge. Decoding is deferred (Perfetto's tokenizer idea): the hot loop
// touches only timestamp and type id; kvm_decoder reads the fields an analysis needs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "decode/event_format.h"
#include "model/diagnostics.h"
#include "model/trace_meta.h"
#include "sources/event_source.h"

namespace exitscope {

struct RawEvent {
  uint64_t ts_ns = 0;
  int32_t cpu = -1;
  int32_t tid = -1;                    // perf sample tid; trace.dat: common_pid of the payload
  uint16_t type_id = 0;                // common_type
  std::span<const uint8_t> payload;    // the whole record starting at common_type
};

class RawEventSource {
 public:
  virtual ~RawEventSource() = default;
  virtual const TraceMeta& meta() const = 0;
  virtual const FormatRegistry& formats() const = 0;
  // Next record in time order; false at the end. Payload stays valid until the next call.
  virtual bool Next(RawEvent* event, LostEvents* lost) = 0;
  virtual Diagnostics& diagnostics() = 0;
  virtual uint64_t bytes_done() const { return 0; }
  virtual uint64_t bytes_total() const { return 0; }
};

}  // namespace exitscope
