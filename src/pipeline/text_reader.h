// Text traces as a KvmEventSource: the kernel's trace file, `trace-cmd report` output and
// `perf script` output, plain or gzip. The dialect is detected from the lines themselves.
// In: a path. Out: KvmEvents in the file's order (all three tools print time-ordered output; a
// timestamp going backwards is counted). Lines that are not kvm events are skipped and counted;
// unparseable lines are counted as errors and flag the result partial — never a crash.
// Assumption: timestamps have the resolution the text printed (µs for all three by default).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/result.h"
#include "model/event_source.h"

namespace exitscope {

Result<std::unique_ptr<KvmEventSource>> OpenTextSource(const std::string& path);
// The same over bytes in memory (fuzzers, tests); `bytes` must outlive the source.
Result<std::unique_ptr<KvmEventSource>> OpenTextSourceBuffer(std::span<const uint8_t> bytes,
                                                             const std::string& name);

// True when the first lines of `head` look like one of the text dialects (for input detection).
bool LooksLikeTextTrace(std::string_view head);

}  // namespace exitscope
