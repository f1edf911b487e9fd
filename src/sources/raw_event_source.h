// The interface of the binary sources (trace.dat, perf.data): undecoded records in time order with
// the formats that decode them. In: an opened file. Out: RawEvents (model/raw_event.h) for the decode
// stage (decode/kvm_decoder.h) and `dump`.
#pragma once

#include <cstdint>
#include <vector>

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
  // A hint from the consumer, before the first Next: records whose type id maps to 1 here (ids past
  // the end: 0) will be thrown away, so the source may leave them out before they are merged. They
  // are still walked (time span, per-CPU start, page checks) and counted in left_out(). A loss
  // marker before a left-out record: trace.dat hands that record out anyway (the marker goes with
  // it); perf.data, whose markers are records of their own, hands it on with the next sample.
  // Sources that cannot filter cheaply ignore it and hand out every record.
  virtual void LeaveOut(std::vector<uint8_t> type_ids) { (void)type_ids; }
  // Records left out so far.
  virtual uint64_t left_out() const { return 0; }
  // Threads of its own the source keeps busy while it is read (a compressed trace.dat's
  // decompression ahead), so a consumer starting threads of its own does not crowd the cores.
  virtual unsigned busy_threads() const { return 0; }
};

}  // namespace exitscope
