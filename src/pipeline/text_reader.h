// Text traces as a KvmEventSource: the kernel's trace file, `trace-cmd report` output and
// `perf script` output, plain or gzip. The dialect is detected from the lines themselves.
// In: a path. Out: KvmEvents in the file's order (all three tools print time-ordered output; a
// timestamp going backwards is counted). Lines that are not kvm events are skipped and counted;
// unparseable lines are counted as errors and flag the result partial — never a crash.
// Assumption: timestamps have the resolution the text printed (µs for all three by default).
// Clocks: see OpenTextSource.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "base/result.h"
#include "sources/mapped_file.h"
#include "model/event_source.h"

namespace exitscope {

// The first event line's timestamp decides the unit: seconds ("14.789538") are ns; a plain integer
// is the clock's raw count (unit unknown, or TSC cycles converted with clock.tsc_khz).
// Bumps DiagId::kTextMixedTimestampForms for lines printed the other way (skipped).
Result<std::unique_ptr<KvmEventSource>> OpenTextSource(const std::string& path, const ClockOptions& clock = {});
// The same over an input already opened (and sniffed) once: a pipe cannot be opened again.
Result<std::unique_ptr<KvmEventSource>> OpenTextSource(std::unique_ptr<MappedFile> input, const ClockOptions& clock);
// The same over bytes in memory (fuzzers, tests); `bytes` must outlive the source.
Result<std::unique_ptr<KvmEventSource>> OpenTextSourceBuffer(std::span<const uint8_t> bytes, const std::string& name,
                                                             const ClockOptions& clock = {});

// True when the first lines of `head` look like one of the text dialects (for input detection).
bool LooksLikeTextTrace(std::string_view head);

}  // namespace exitscope
