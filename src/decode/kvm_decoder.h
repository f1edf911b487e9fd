// Binds the kvm tracepoints' fields by name (from the trace's own formats) and turns raw records into
// typed KvmEvents. A field the kernel lacks is an absent value (0, or -1 for vcpu_id), counted once
// per event kind as "decode.missing_field.<event>.<field>", never a crash.
#pragma once

#include <memory>

#include "sources/raw_event_source.h"
#include "model/event_source.h"

namespace exitscope {

class KvmDecoder {
 public:
  KvmDecoder(const FormatRegistry& formats, Isa isa_hint, Diagnostics* diagnostics);
  ~KvmDecoder();
  // False for events that are not kvm events this decoder knows (caller may count / skip them).
  bool Decode(const RawEvent& raw, KvmEvent* out) const;

 private:
  struct Bindings;
  std::unique_ptr<Bindings> b_;
};

// Adapts a raw source to a typed one (kvm events only; others are counted as skipped).
std::unique_ptr<KvmEventSource> MakeDecodingSource(std::unique_ptr<RawEventSource> raw);

}  // namespace exitscope
