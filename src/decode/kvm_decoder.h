// Binds the kvm tracepoints' fields by name (from the trace's own formats) and turns raw records into
// typed KvmEvents. A field the kernel lacks is an absent value (0, or -1 for vcpu_id), counted once
// per event kind as "decode.missing_field.<event>.<field>", never a crash.
#pragma once

#include <memory>
#include <vector>

#include "sources/raw_event_source.h"
#include "model/event_source.h"

namespace exitscope {

// Damage a decode found, counted by the caller (decoders are shared by threads) and reported once
// with Report().
struct DecodeAnomalies {
  uint64_t unknown_ids = 0;    // records whose type id no format of the trace has
  uint64_t field_outside = 0;  // kvm records shorter than a bound field's end
  void Add(const DecodeAnomalies& o) {
    unknown_ids += o.unknown_ids;
    field_outside += o.field_outside;
  }
  void Report(Diagnostics* d);  // bumps the non-zero counts and clears them
};

class KvmDecoder {
 public:
  KvmDecoder(const FormatRegistry& formats, Isa isa_hint, Diagnostics* diagnostics);
  ~KvmDecoder();
  // False for events that are not kvm events this decoder knows (caller may count / skip them).
  // Damage (an id without a format, a field past the record's end) is counted in *anomalies.
  bool Decode(const RawEvent& raw, KvmEvent* out, DecodeAnomalies* anomalies = nullptr) const;
  // Type id -> 1 for the ids Decode always answers false for without counting anything (a format
  // the trace has, of an event this decoder does not model): a source may leave those records out
  // (RawEventSource::LeaveOut). Ids without a format stay 0: Decode must see them to count them.
  std::vector<uint8_t> UndecodedIds() const;

 private:
  struct Bindings;
  std::unique_ptr<Bindings> b_;
};

// Adapts a raw source to a typed one (kvm events only; others are counted as skipped).
std::unique_ptr<KvmEventSource> MakeDecodingSource(std::unique_ptr<RawEventSource> raw);

}  // namespace exitscope
