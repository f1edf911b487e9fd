#include "pipeline/input_detector.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>
#include <unistd.h>

#include "decode/kvm_decoder.h"
#include "format/tracing_data.h"
#include "sources/mapped_file.h"
#include "sources/perfdata/perfdata_source.h"
#include "sources/text/text_line_reader.h"
#include "pipeline/perfdata_rounds.h"
#include "pipeline/text_reader.h"
#include "pipeline/tracedat_reader.h"
#include "pipeline/tracedat_slices.h"

namespace exitscope {
namespace {

// tools/perf/util/header.c: "PERFILE2" as a little-endian u64.
constexpr char kPerfMagic[] = "PERFILE2";
// Bytes the format is told by: the longest magic (trace.dat's 10) and enough text to call it text.
constexpr size_t kSniffBytes = 64;
// What a pipe gives before its format is chosen: also the text reader's clock probe
// (text_reader.cc kClockProbeLines) reads only this much of a stream.
constexpr size_t kLookaheadBytes = 1 << 20;

Error Unsupported(const std::string& path, std::string_view what) {
  return MakeError(kExitDataErr, "input.unsupported-format",
                   "'" + path + "' looks like " + std::string(what) + ", which this build cannot read yet",
                   "record with `trace-cmd record -e kvm` and pass the trace.dat it writes");
}

}  // namespace

Result<OpenedInput> OpenInput(const std::string& path, InputFormat format) {
  // open(2) of a directory succeeds and its read fails: say what it is, not "empty".
  struct stat st {};
  if (path != kStdinPath && ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    std::string hint = "pass a trace file (trace.dat, perf.data or trace text), not a directory";
    for (const char* name : {"trace.dat", "perf.data"}) {
      std::string inside = path + (path.ends_with("/") ? "" : "/") + name;
      if (::access(inside.c_str(), F_OK) == 0) {
        hint += "; did you mean '" + inside + "'?";
        break;
      }
    }
    return MakeError(kExitNoInput, "input.not-a-file", "'" + path + "' is a directory", hint);
  }
  // Opened once: a regular file is mapped; anything else (pipe, FIFO, stdin, `<(…)`) is read up to
  // a look-ahead the format is sniffed from. Text streams on from there (flat memory); binary
  // formats seek (trace.dat v7 sections, perf.data file mode), so their rest is read into memory.
  auto file = MappedFile::Open(path, kLookaheadBytes);
  if (!file.ok()) return file.error();
  OpenedInput in{std::move(file.value()), format};
  if (format == InputFormat::kAuto) {
    auto detected = DetectInputFormat(in.file->bytes(), path == kStdinPath ? "stdin" : path);
    if (!detected.ok()) return detected.error();
    in.format = *detected;
  }
  if (in.format != InputFormat::kText) {
    if (Status read = in.file->ReadRest(); !read.ok()) return read.error();
  }
  return in;
}

Result<InputFormat> DetectInputFormat(const std::string& path) {
  auto in = OpenInput(path);
  if (!in.ok()) return in.error();
  return in->format;
}

Result<InputFormat> DetectInputFormat(std::span<const uint8_t> bytes, const std::string& path) {
  const size_t n = std::min<size_t>(bytes.size(), kSniffBytes);
  const uint8_t* head = bytes.data();
  if (n == 0) {
    return MakeError(kExitDataErr, "input.empty", "'" + path + "' is empty",
                     "the recorder wrote nothing; was it stopped before it flushed?");
  }
  // A file cut inside the magic itself still goes to the trace.dat reader, which names the cut.
  if (LooksLikeTraceDat(bytes.first(n)) || (n < kTracingMagicSize && std::memcmp(head, kTracingMagic, n) == 0)) {
    return InputFormat::kTraceDat;
  }
  if (n >= 8 && std::memcmp(head, kPerfMagic, 8) == 0) return InputFormat::kPerfData;
  // gzip: trace text compressed (trace-cmd report | gzip); the text reader inflates it.
  if (LooksGzip(head, n)) return InputFormat::kText;
  // Printable start: one of the text dialects (trace-cmd report, perf script, tracefs trace).
  bool text = true;
  for (size_t i = 0; i < n; ++i) {
    if (head[i] < 0x09 || (head[i] > 0x0d && head[i] < 0x20 && head[i] != 0x1b)) {
      text = false;
      break;
    }
  }
  if (text) return InputFormat::kText;
  return MakeError(kExitDataErr, "input.unknown-format",
                   "'" + path + "' is neither a trace.dat, a perf.data nor trace text",
                   "pass the file written by `trace-cmd record -e kvm` (trace.dat) or "
                   "`perf record -e 'kvm:*'` (perf.data)");
}

Result<std::unique_ptr<RawEventSource>> OpenRawEventSource(OpenedInput input, const ClockOptions& clock) {
  const std::string path = input.file->path();
  switch (input.format) {
    case InputFormat::kTraceDat: return OpenTraceDat(std::move(input.file), clock);
    case InputFormat::kPerfData: return OpenPerfDataRaw(std::move(input.file), clock);
    case InputFormat::kText: return Unsupported(path, "trace text");
    case InputFormat::kAuto: break;
  }
  return Unsupported(path, "an unknown format");
}

Result<std::unique_ptr<RawEventSource>> OpenRawEventSource(const std::string& path, InputFormat format,
                                                           const ClockOptions& clock) {
  auto in = OpenInput(path, format);
  if (!in.ok()) return in.error();
  return OpenRawEventSource(std::move(in.value()), clock);
}

Result<std::unique_ptr<KvmEventSource>> OpenKvmEventSource(OpenedInput input, unsigned threads,
                                                           const ClockOptions& clock, bool one_pass) {
  // Text is already typed events: no raw records to decode.
  if (input.format == InputFormat::kText) return OpenTextSource(std::move(input.file), clock);
  // The sliced reader maps the file per slice and its fallback opens it again: regular files only.
  if (input.format == InputFormat::kTraceDat && threads > 1 && input.file->mapped() &&
      input.file->path() != kStdinPath) {
    const std::string path = input.file->path();
    input.file.reset();
    return OpenTraceDatSliced(path, threads, 0, clock, one_pass);
  }
  // perf.data: rounds decoded on every thread (file mode; pipe mode stays sequential inside), or
  // chunk by chunk on this one (-j 1, small files): either way the file is read once.
  if (input.format == InputFormat::kPerfData) {
    return OpenPerfDataParallel(std::move(input.file), threads, 0, clock);
  }
  auto raw = OpenRawEventSource(std::move(input), clock);
  if (!raw.ok()) return raw.error();
  return MakeDecodingSource(std::move(raw.value()));
}

Result<std::unique_ptr<KvmEventSource>> OpenKvmEventSource(const std::string& path, InputFormat format,
                                                           unsigned threads, const ClockOptions& clock, bool one_pass) {
  auto in = OpenInput(path, format);
  if (!in.ok()) return in.error();
  return OpenKvmEventSource(std::move(in.value()), threads, clock, one_pass);
}

}  // namespace exitscope
