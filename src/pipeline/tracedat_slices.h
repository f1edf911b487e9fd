// Reads an uncompressed trace.dat on several threads: the trace is cut into time slices, each
// worker walks, merges and decodes one slice's pages of every CPU, and the caller's thread hands the
// slices' KvmEvents on in order — the same events, loss markers and diagnostics as the sequential
// reader (tracedat_reader.cc + kvm_decoder.cc), in the same order.
// In: a path, a thread count. Out: a KvmEventSource. Memory stays flat: a few slices are in flight.
// Assumption: each CPU's timestamps never go back (the ring buffer writes them so); slices check it
// as they walk, and a trace where they do is flagged with DiagId::kTracedatSlicesOutOfOrder so the caller reads it
// again sequentially (ReadsAgainSequentially) rather than trust the cut.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "model/diagnostics.h"
#include "base/result.h"
#include "model/event_source.h"
#include "pipeline/input_detector.h"

namespace exitscope {

// Bumped (kError) when a CPU's time went back, so the time cut may have misplaced records.

// About this much page data per slice: big enough that the cut costs nothing, small enough that a
// few decoded slices in flight stay a few MB.
inline constexpr uint64_t kDefaultSliceBytes = 1 << 20;

// Uncompressed data of at least 4 slices and threads > 1: the sliced reader; otherwise (compressed
// data, small files, one thread, or `one_pass`: a caller that cannot read twice, as the sliced reader
// may need) the sequential reader. `slice_bytes` 0 = kDefaultSliceBytes.
Result<std::unique_ptr<KvmEventSource>> OpenTraceDatSliced(const std::string& path, unsigned threads,
                                                           uint64_t slice_bytes = 0, const ClockOptions& clock = {},
                                                           bool one_pass = false);

// How many time slices `source` reads in (0: it is not the sliced reader). For tests and progress.
size_t SliceCount(const KvmEventSource& source);
// Events of the largest slice `source` has handed out so far (0: it is not the sliced reader). Tests.
size_t LargestSlice(const KvmEventSource& source);

// True when a source's diagnostics say its result must be read again with one thread.
bool ReadsAgainSequentially(const Diagnostics& d);

// Runs `read` over *source (opened from `path` with any thread count). When the read says the sliced
// cut cannot be trusted (a CPU's clock stepped back), opens `path` again with one thread into *source
// and runs `read` over that: only the sequential reader keeps every record where it was. What `read`
// computed the second time is the answer (`clock` as the first open had it). Errors: the second open
// failed.
Status ReadWithSequentialFallback(std::unique_ptr<KvmEventSource>* source, const std::string& path, InputFormat format,
                                  const std::function<void(KvmEventSource&)>& read, const ClockOptions& clock = {});

}  // namespace exitscope
