#include "pipeline/input_detector.h"

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
#include "pipeline/text_reader.h"
#include "pipeline/tracedat_reader.h"
#include "pipeline/tracedat_slices.h"

namespace exitscope {
namespace {

// tools/perf/util/header.c: "PERFILE2" as a little-endian u64.
constexpr char kPerfMagic[] = "PERFILE2";

Error Unsupported(const std::string& path, std::string_view what) {
  return MakeError(kExitDataErr, "input.unsupported-format",
                   "'" + path + "' looks like " + std::string(what) + ", which this build cannot read yet",
                   "record with `trace-cmd record -e kvm` and pass the trace.dat it writes");
}

}  // namespace

Result<InputFormat> DetectInputFormat(const std::string& path) {
  // fopen() opens a directory and its read fails: say what it is, not "empty".
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
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
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return InputOpenError(path, errno);
  uint8_t head[64] = {};
  size_t n = std::fread(head, 1, sizeof head, f);
  std::fclose(f);
  if (n == 0) {
    return MakeError(kExitDataErr, "input.empty", "'" + path + "' is empty",
                     "the recorder wrote nothing; was it stopped before it flushed?");
  }
  std::span<const uint8_t> bytes(head, n);
  // A file cut inside the magic itself still goes to the trace.dat reader, which names the cut.
  if (LooksLikeTraceDat(bytes) || (n < kTracingMagicSize && std::memcmp(head, kTracingMagic, n) == 0)) {
    return InputFormat::kTraceDat;
  }
  if (n >= 8 && std::memcmp(head, kPerfMagic, 8) == 0) return InputFormat::kPerfData;
  // gzip: trace text compressed (trace-cmd report | gzip); the text reader inflates it.
  if (LooksGzip(head, n)) return InputFormat::kText;
  // Printable start: one of the text dialects (trace-cmd report, perf script, tracefs trace).
  bool text = true;
  for (size_t i = 0; i < n; ++i) {
    if (head[i] < 0x09 || (head[i] > 0x0d && head[i] < 0x20 && head[i] != 0x1b)) { text = false; break; }
  }
  if (text) return InputFormat::kText;
  return MakeError(kExitDataErr, "input.unknown-format",
                   "'" + path + "' is neither a trace.dat, a perf.data nor trace text",
                   "pass the file written by `trace-cmd record -e kvm` (trace.dat) or "
                   "`perf record -e 'kvm:*'` (perf.data)");
}

Result<std::unique_ptr<RawEventSource>> OpenRawEventSource(const std::string& path, InputFormat format,
                                                           const ClockOptions& clock) {
  if (format == InputFormat::kAuto) {
    auto detected = DetectInputFormat(path);
    if (!detected.ok()) return detected.error();
    format = *detected;
  }
  switch (format) {
    case InputFormat::kTraceDat: return OpenTraceDat(path, clock);
    case InputFormat::kPerfData: return OpenPerfDataRaw(path, clock);
    case InputFormat::kText: return Unsupported(path, "trace text");
    case InputFormat::kAuto: break;
  }
  return Unsupported(path, "an unknown format");
}

Result<std::unique_ptr<KvmEventSource>> OpenKvmEventSource(const std::string& path, InputFormat format,
                                                           unsigned threads, const ClockOptions& clock) {
  if (format == InputFormat::kAuto) {
    auto detected = DetectInputFormat(path);
    if (!detected.ok()) return detected.error();
    format = *detected;
  }
  // Text is already typed events: no raw records to decode.
  if (format == InputFormat::kText) return OpenTextSource(path, clock);
  if (format == InputFormat::kTraceDat && threads > 1) return OpenTraceDatSliced(path, threads, 0, clock);
  auto raw = OpenRawEventSource(path, format, clock);
  if (!raw.ok()) return raw.error();
  return MakeDecodingSource(std::move(raw.value()));
}

}  // namespace exitscope
