// Picks the reader for an input by its content (magic bytes), not its name.
// In: a path and an optional forced format. Out: an opened source or an Error with a hint.
// OpenKvmEventSource (sources/event_source.h) is built on these.
#pragma once

#include <memory>
#include <string>

#include "decode/raw_event.h"
#include "sources/event_source.h"

namespace exitscope {

// Sniffs the first bytes of `path` (66 when it cannot be opened).
Result<InputFormat> DetectInputFormat(const std::string& path);

// Binary inputs (trace.dat; perf.data later) as undecoded records, for `dump` and decoders.
Result<std::unique_ptr<RawEventSource>> OpenRawEventSource(const std::string& path,
                                                           InputFormat format = InputFormat::kAuto,
                                                           const ClockOptions& clock = {});

}  // namespace exitscope
