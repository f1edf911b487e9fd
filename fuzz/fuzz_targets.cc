// The fuzz targets' bodies, shared by the libFuzzer binaries (fuzz/*_fuzzer.cc) and the regression
// replay test (tests/fuzz_regress_test.cc), so a crash input found once is checked in every build.
#include "fuzz_targets.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>

#include "analysis/report_pipeline.h"
#include "format/event_format.h"
#include "decode/field_text.h"
#include "decode/kvm_decoder.h"
#include "format/tracing_data.h"
#include "report/text_reporter.h"
#include "sources/perfdata/perfdata_reader.h"
#include "sources/perfdata/perfdata_source.h"
#include "sources/tracedat/ring_buffer_page.h"
#include "pipeline/text_reader.h"
#include "pipeline/tracedat_reader.h"
#include "pipeline/tracedat_slices.h"
#include "pipeline/input_detector.h"
#include "pipeline/perfdata_rounds.h"

namespace exitscope {

// a whole trace.dat (v6/v7, any codec) from memory through the reader, the
// per-CPU merge, the kvm decoder, the exit pairer/aggregator and the text reporter — what
// `exitscope report` does to a file (JSON rendering is left out: it reads nothing from the input
// that the text reporter does not, and took a quarter of each run). Seeds: fuzz/corpus/tracedat.
// What `exitscope report` does with an opened binary source: decode, pair, aggregate, render.
int ReportRawSource(Result<std::unique_ptr<RawEventSource>> raw) {
  if (!raw.ok()) return 0;
  auto source = MakeDecodingSource(std::move(raw.value()));
  ReportOptions options;
  Report report = BuildReport(*source, options);
  RenderTextReport(report);
  return 0;
}

// the ring-buffer page walker on arbitrary page bytes. The first input byte picks
// the page size (1..16 KiB steps) so commits past the page and records past the commit both occur;
// every record handed out must lie inside the page (checked: a violation aborts).
int FuzzRingBufferPage(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  size_t page_size = std::min<size_t>(size - 1, static_cast<size_t>(data[0] + 1) * 64);
  std::span<const uint8_t> page(data + 1, page_size);
  static const PageLayout layout = PageLayout::FromHeaderPage(
      "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
      "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
      "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
      "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n");
  RingBufferStats stats;
  PageWalker walker;
  uint64_t missed = 0;
  if (!walker.Begin(page, layout, &stats, &missed)) return 0;
  PageRecord rec;
  while (walker.Next(&rec)) {
    if (rec.payload.data() < page.data() || rec.payload.data() + rec.payload.size() > page.data() + page.size()) {
      std::abort();
    }
  }
  return 0;
}

// the tracefs `format` text parser, then every parsed field read from a payload
// made of the same bytes, as numbers and as `dump` renders them (fields past the payload must read
// as 0 / nothing, never out of bounds).
int FuzzEventFormat(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto format = ParseEventFormat(text, "kvm");
  if (!format.ok()) return 0;
  std::span<const uint8_t> payload(data, size);
  for (const auto* list : {&format->common_fields, &format->fields}) {
    for (const FieldFormat& f : *list) {
      ReadUnsigned(&f, payload);
      ReadSigned(&f, payload);
    }
  }
  std::string line;
  AppendFieldsText(*format, payload, &line);
  nlohmann::json json = nlohmann::json::object();
  AppendFieldsJson(*format, payload, &json);
  // dump --json writes a plan's JSON text in place of the object's: they must not differ.
  std::string planned;
  FieldTextPlan(*format).AppendJson(payload, &planned);
  if (planned != json.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)) std::abort();
  FormatRegistry registry;
  registry.Add(std::move(format.value()));
  return 0;
}

// the tracing-data block (trace.dat v6 header, perf.data HEADER_TRACING_DATA):
// header_page/header_event, ftrace and event formats, kallsyms, printk formats, saved cmdlines.
int FuzzTracingData(const uint8_t* data, size_t size) {
  FormatRegistry formats;
  TraceMeta meta;
  Diagnostics diagnostics;
  TracingDataInfo info;
  (void)ParseTracingData({data, size}, &formats, &meta, &diagnostics, &info);
  return 0;
}

// Trace text (trace-cmd report / perf script / tracefs trace dialects, plain or gzip) from memory
// through the line parsers and the report pipeline.
int FuzzText(const uint8_t* data, size_t size) {
  auto source = OpenTextSourceBuffer({data, size}, "fuzz.txt");
  if (!source.ok()) return 0;
  ReportOptions options;
  Report report = BuildReport(**source, options);
  RenderTextReport(report);
  return 0;
}

namespace {

// Every event, the loss marker before it, and the diagnostics, as one comparable text.
std::string ReadAllAsText(KvmEventSource& src, bool batches) {
  std::string out;
  auto add = [&](const KvmEvent& e, const LostEvents* l) {
    if (l) out += "lost " + std::to_string(l->cpu) + " " + std::to_string(l->count) + "\n";
    out += std::to_string(e.ts_ns) + " " + std::to_string(e.cpu) + " " + std::to_string(e.tid) + " " +
           std::to_string(static_cast<int>(e.kind)) + " " + std::to_string(static_cast<int>(e.isa)) + " " +
           std::to_string(e.write) + " " + std::to_string(e.vcpu_id) + " " + std::to_string(e.reason) + " " +
           std::to_string(e.size) + " " + std::to_string(e.rip) + " " + std::to_string(e.info1) + " " +
           std::to_string(e.info2) + " " + std::to_string(e.intr_info) + " " + std::to_string(e.error_code) + " " +
           std::to_string(e.count) + " " + std::to_string(e.aux) + "\n";
  };
  if (batches) {
    KvmEventBatch b;
    while (src.NextBatch(&b)) ForEachEvent(b, add);
  } else {
    KvmEvent e;
    LostEvents l;
    while (src.Next(&e, &l)) add(e, l.cpu >= 0 ? &l : nullptr);
  }
  for (const auto& d : src.diagnostics().NonZero()) out += d.name + " " + std::to_string(d.count) + "\n";
  for (const auto& [cpu, ts] : src.meta().cpu_first_ts_ns)
    out += "first " + std::to_string(cpu) + " " + std::to_string(ts) + "\n";
  // The names, once the records are read (a perf.data reader may take them in as it goes).
  for (const auto& [tid, comm] : src.meta().comm_by_tid) out += "comm " + std::to_string(tid) + " " + comm + "\n";
  for (const auto& [tid, tgid] : src.meta().tgid_by_tid)
    out += "tgid " + std::to_string(tid) + " " + std::to_string(tgid) + "\n";
  return out;
}

// The input as a file (memfd, -1 when it cannot be made): readers map it, or pread it, as a trace on
// disk. The caller closes it.
int MemFile(const char* name, const uint8_t* data, size_t size) {
  int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return -1;
  for (size_t done = 0; done < size;) {
    ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      ::close(fd);
      return -1;
    }
    done += static_cast<size_t>(n);
  }
  return fd;
}

// `in_place` (the input opened from memory) against the same bytes as a file (memfd) opened by
// `open_file`, which the readers pread rather than read in place: the file's events, loss markers,
// diagnostics and names must be those read in place, Next or NextBatch for the file by the input's
// last byte. A difference, or a file that does not open where the bytes did, aborts.
template <typename OpenFile>
void CheckFileReadAsInPlace(const char* name, const uint8_t* data, size_t size,
                            Result<std::unique_ptr<RawEventSource>> in_place, OpenFile open_file) {
  if (!in_place.ok()) return;
  const std::string want = ReadAllAsText(*MakeDecodingSource(std::move(in_place.value())), false);
  int fd = MemFile(name, data, size);
  if (fd < 0) return;
  auto file = MappedFile::Open("/proc/self/fd/" + std::to_string(fd));
  if (file.ok() && (*file)->mapped()) {
    auto read = open_file(std::move(file.value()));
    if (!read.ok()) std::abort();
    if (ReadAllAsText(*MakeDecodingSource(std::move(read.value())), size && (data[size - 1] & 1)) != want) std::abort();
  }
  ::close(fd);
}

}  // namespace

// A whole perf.data (file or pipe mode) from memory through the perf reader (header, attrs,
// features, HEADER_TRACING_DATA, round-sorted samples), the kvm decoder and the report pipeline.
// Each sample the inline parser answers for must parse the same through ParseSample. Then the same
// bytes as a file (memfd), whose records the sequential reader preads into a window that drops and
// moves what was handed out (PerfSampleStream), not in place: the events, loss markers, diagnostics
// and names must be those read in place (a difference aborts). The last byte picks Next or NextBatch.
int FuzzPerfData(const uint8_t* data, size_t size) {
  Diagnostics diagnostics;
  if (auto f = PerfDataFile::Open(MappedFile::View({data, size}, "fuzz.perf.data"), &diagnostics);
      f.ok() && (*f)->FirstFastParseMismatch() != -1) {
    std::abort();
  }
  ReportRawSource(OpenPerfDataRawBuffer({data, size}, "fuzz.perf.data"));
  CheckFileReadAsInPlace("fuzz.perf.data", data, size, OpenPerfDataRawBuffer({data, size}, "fuzz.perf.data"),
                         [](std::unique_ptr<MappedFile> f) { return OpenPerfDataRaw(std::move(f), ClockOptions{}); });
  return 0;
}

// A whole trace.dat (v6/v7, any codec) from memory, as `exitscope report` reads it (above).
// Then the same bytes as a file (memfd), which the reader reads with pread (an uncompressed trace's
// pages, a compressed one's chunks), not in place: the events, loss markers, diagnostics and first
// times must be those read in place (a difference aborts). The input's last byte picks Next or
// NextBatch for the file.
int FuzzTraceDat(const uint8_t* data, size_t size) {
  ReportRawSource(OpenTraceDatBuffer({data, size}, "fuzz.dat"));
  CheckFileReadAsInPlace("fuzz.dat", data, size, OpenTraceDatBuffer({data, size}, "fuzz.dat"),
                         [](std::unique_ptr<MappedFile> f) { return OpenTraceDat(std::move(f), ClockOptions{}); });
  return 0;
}

// The parallel trace.dat reader against the sequential one (a differential target): the input is
// made a file (memfd), read with 1-page slices on 2 threads and with one thread. Unless the sliced
// reader flags its cut (ReadsAgainSequentially), events, loss markers, diagnostics and per-CPU
// starts must be identical: a difference aborts. The input's last byte picks Next or NextBatch.
// Seeds: fuzz/corpus/tracedat_sliced (uncompressed traces of 3 pages a CPU).
int FuzzTraceDatSliced(const uint8_t* data, size_t size) {
  int fd = MemFile("fuzz.dat", data, size);
  if (fd < 0) return 0;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  auto sliced = OpenTraceDatSliced(path, 2, 4096);
  if (sliced.ok() && SliceCount(**sliced) > 0) {
    bool batches = size && (data[size - 1] & 1);
    std::string par = ReadAllAsText(**sliced, batches);
    if (!ReadsAgainSequentially((*sliced)->diagnostics())) {
      auto sequential = OpenKvmEventSource(path, InputFormat::kTraceDat, 1);
      if (!sequential.ok() || ReadAllAsText(**sequential, false) != par) std::abort();
    }
  }
  ::close(fd);
  return 0;
}

// The parallel perf.data reader against the sequential one (a differential target): the input is
// read on 2 threads with a chunk cut after every record, and with the sequential reader
// (OpenPerfDataRaw + MakeDecodingSource); events, loss markers, diagnostics, thread names and the
// time span must be identical: a difference aborts. The input's last byte picks Next or NextBatch.
// Then the same as a file (memfd), which the round workers read (and walk) with pread, the caller's
// thread alone (one thread, default chunks) too, and the sequential reader through its mapping.
// Seeds: fuzz/corpus/perfdata_rounds (real records, reordered across rounds, with loss records).
int FuzzPerfDataRounds(const uint8_t* data, size_t size) {
  auto parallel = OpenPerfDataParallel(MappedFile::View({data, size}, "fuzz.perf.data"), 2, 1);
  if (!parallel.ok() || PerfChunkCount(**parallel) == 0) return 0;  // read sequentially: nothing to compare
  bool batches = size && (data[size - 1] & 1);
  auto span = [](const KvmEventSource& s) {
    return "span " + std::to_string(s.meta().first_ts_ns) + " " + std::to_string(s.meta().last_ts_ns) + "\n";
  };
  std::string par = ReadAllAsText(**parallel, batches);
  par += span(**parallel);
  auto raw = OpenPerfDataRawBuffer({data, size}, "fuzz.perf.data");
  if (!raw.ok()) std::abort();
  auto sequential = MakeDecodingSource(std::move(raw.value()));
  std::string seq = ReadAllAsText(*sequential, false);
  seq += span(*sequential);
  if (seq != par) std::abort();
  int fd = MemFile("fuzz.perf.data", data, size);
  if (fd < 0) return 0;
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  auto file = MappedFile::Open(path);
  if (file.ok() && (*file)->mapped()) {
    // The span is the meta's once the events are read: read first, then ask (`a + b` may evaluate b
    // first).
    auto read_then_span = [&](KvmEventSource& s) {
      std::string text = ReadAllAsText(s, batches);
      return text + span(s);
    };
    auto read = OpenPerfDataParallel(std::move(file.value()), 2, 1);
    if (!read.ok() || read_then_span(**read) != par) std::abort();
    // No worker: the caller's thread cuts and parses each chunk as it needs it (-j 1).
    auto one = OpenKvmEventSource(path, InputFormat::kPerfData, 1);
    if (!one.ok() || PerfChunkCount(**one) == 0 || read_then_span(**one) != par) std::abort();
    // The sequential reader over the same file: the open walk's pread window, then the mapping.
    auto mapped = OpenPerfDataRaw(path);
    if (!mapped.ok()) std::abort();
    auto decoded = MakeDecodingSource(std::move(mapped.value()));
    if (read_then_span(*decoded) != par) std::abort();
  }
  ::close(fd);
  return 0;
}

const std::vector<FuzzTarget>& FuzzTargets() {
  static const std::vector<FuzzTarget> targets = {
      {"tracedat", FuzzTraceDat},
      {"ring_buffer_page", FuzzRingBufferPage},
      {"event_format", FuzzEventFormat},
      {"tracing_data", FuzzTracingData},
      {"perfdata", FuzzPerfData},
      {"text", FuzzText},
      {"tracedat_sliced", FuzzTraceDatSliced},
      {"perfdata_rounds", FuzzPerfDataRounds},
  };
  return targets;
}

}  // namespace exitscope
