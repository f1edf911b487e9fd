// Picks the reader for an input by its content (magic bytes), not its name.
// In: a path and an optional forced format. Out: an opened source or an Error with a hint.
// OpenKvmEventSource (model/event_source.h) is built on these.
#pragma once

#include <memory>
#include <string>

#include "sources/mapped_file.h"
#include "sources/raw_event_source.h"
#include "model/event_source.h"

namespace exitscope {

enum class InputFormat { kAuto, kTraceDat, kPerfData, kText };

// Opens `path`, detecting the format from its content unless `format` says otherwise
// (pipeline/input_detector.cc). threads > 1: an uncompressed trace.dat is decoded on that many threads
// (pipeline/tracedat_slices.h; read it through ReadWithSequentialFallback, which reads it again with
// one thread when the sliced cut cannot be trusted). `one_pass`: the caller cannot read twice
// (a command writing to stdout as it reads), so no sliced reader; the others still use the threads.
// `clock` (--tsc-khz) reaches every reader.
Result<std::unique_ptr<KvmEventSource>> OpenKvmEventSource(const std::string& path,
                                                           InputFormat format = InputFormat::kAuto,
                                                           unsigned threads = 1, const ClockOptions& clock = {},
                                                           bool one_pass = false);

// An input opened once ("-" = stdin) and its format, sniffed from the bytes already read: a pipe,
// FIFO or `<(…)` cannot be opened a second time (it would block or start past the sniffed bytes).
struct OpenedInput {
  std::unique_ptr<MappedFile> file;
  InputFormat format = InputFormat::kAuto;
};
// `format` kAuto: detected from the content; otherwise kept. 66 when it cannot be opened.
Result<OpenedInput> OpenInput(const std::string& path, InputFormat format = InputFormat::kAuto);
Result<std::unique_ptr<KvmEventSource>> OpenKvmEventSource(OpenedInput input, unsigned threads = 1,
                                                           const ClockOptions& clock = {}, bool one_pass = false);
Result<std::unique_ptr<RawEventSource>> OpenRawEventSource(OpenedInput input, const ClockOptions& clock = {});

// The format of the first bytes of an input called `name` in messages.
Result<InputFormat> DetectInputFormat(std::span<const uint8_t> head, const std::string& name);
// Sniffs `path` (66 when it cannot be opened). Reads a pipe to its end: prefer OpenInput.
Result<InputFormat> DetectInputFormat(const std::string& path);

// Binary inputs (trace.dat; perf.data later) as undecoded records, for `dump` and decoders.
Result<std::unique_ptr<RawEventSource>> OpenRawEventSource(const std::string& path,
                                                           InputFormat format = InputFormat::kAuto,
                                                           const ClockOptions& clock = {});

}  // namespace exitscope
