// The interface of the binary sources (trace.dat, perf.data): undecoded records in time order with
// the formats that decode them. In: an opened file. Out: RawEvents (model/raw_event.h) for the decode
// stage (decode/kvm_decoder.h) and `dump`.
#pragma once

#include <cstdint>

#include "format/event_format.h"
#include "model/diagnostics.h"
#include "model/raw_event.h"
#include "model/trace_meta.h"

namespace exitscope {

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
