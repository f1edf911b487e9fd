#include "sources/perfdata/perfdata_source.h"

#include <algorithm>

#include "format/tracing_data.h"
#include "sources/perfdata/perfdata_reader.h"
#include "sources/perfdata/perfdata_stream.h"

namespace exitscope {

namespace {

class PerfDataRawSource : public RawEventSource {
 public:
  PerfDataRawSource(std::unique_ptr<PerfDataFile> file, std::unique_ptr<Diagnostics> diagnostics,
                    FormatRegistry formats)
      : diagnostics_(std::move(diagnostics)),
        file_(std::move(file)),
        formats_(std::move(formats)),
        stream_(file_.get(), diagnostics_.get()) {}

  const TraceMeta& meta() const override { return file_->meta(); }
  const FormatRegistry& formats() const override { return formats_; }
  Diagnostics& diagnostics() override { return *diagnostics_; }
  uint64_t bytes_done() const override { return file_->data_offset() + stream_.bytes_done(); }
  uint64_t bytes_total() const override { return file_->file_size(); }
  void LeaveOut(std::vector<uint8_t> type_ids) override { stream_.LeaveOut(std::move(type_ids)); }
  uint64_t left_out() const override { return stream_.left_out(); }

  bool Next(RawEvent* event, LostEvents* lost) override {
    PerfTimedSample s;
    if (!stream_.Next(&s, lost)) {
      first_ts_ = std::min(first_ts_, stream_.left_out_first_ts_ns());
      last_ts_ = std::max(last_ts_, stream_.left_out_last_ts_ns());
      if (first_ts_ <= last_ts_) {
        file_->mutable_meta().first_ts_ns = first_ts_;
        file_->mutable_meta().last_ts_ns = last_ts_;
      }
      return false;
    }
    first_ts_ = std::min(first_ts_, s.ts_ns);
    last_ts_ = std::max(last_ts_, s.ts_ns);
    event->ts_ns = s.ts_ns;
    event->cpu = s.cpu;
    event->tid = s.tid;
    event->type_id = static_cast<uint16_t>(s.raw[0] | s.raw[1] << 8);  // common_type, u16 LE
    event->payload = s.raw;
    return true;
  }

 private:
  std::unique_ptr<Diagnostics> diagnostics_;
  std::unique_ptr<PerfDataFile> file_;
  FormatRegistry formats_;
  PerfSampleStream stream_;
  uint64_t first_ts_ = UINT64_MAX, last_ts_ = 0;  // of every sample, kvm or not
};

}  // namespace

Result<PerfDataParts> OpenPerfDataParts(std::unique_ptr<MappedFile> input, const ClockOptions& clock, bool chunked) {
  const std::string path = input->path();
  auto diagnostics = std::make_unique<Diagnostics>();
  auto file = chunked ? PerfDataFile::OpenChunked(std::move(input), diagnostics.get())
                      : PerfDataFile::Open(std::move(input), diagnostics.get());
  if (!file) return file.error();
  if ((*file)->tracing_data().empty()) {
    (*file)->CompleteScan();  // the hint says whether it has samples
    return MakeError(
        kExitDataErr, "perfdata.no-tracing-data", "'" + path + "' holds no tracepoint formats (HEADER_TRACING_DATA)",
        (*file)->stats().samples ? "record tracepoints: `perf record -e 'kvm:*' -a` or `perf kvm stat record`; a "
                                   "killed perf record leaves no header: stop it with Ctrl-C / SIGINT"
                                 : "the file holds no samples; record with `perf record -e 'kvm:*' -a`");
  }
  FormatRegistry formats;
  TraceMeta& meta = (*file)->mutable_meta();
  auto comms = meta.comm_by_tid;
  if (Status st = ParseTracingData((*file)->tracing_data(), &formats, &meta, diagnostics.get()); !st) {
    return st.error();
  }
  for (auto& [tid, comm] : comms) meta.comm_by_tid[tid] = comm;
  // perf's sample time is perf_clock() or the clockid's, in ns either way (perf_event_open(2)).
  if (clock.tsc_khz > 0) meta.clock_notes.push_back("--tsc-khz ignored: perf.data sample times are ns");
  return PerfDataParts{std::move(file.value()), std::move(diagnostics), std::move(formats)};
}

std::unique_ptr<RawEventSource> MakePerfDataRawSource(PerfDataParts parts) {
  return std::unique_ptr<RawEventSource>(
      new PerfDataRawSource(std::move(parts.file), std::move(parts.diagnostics), std::move(parts.formats)));
}

namespace {

Result<std::unique_ptr<RawEventSource>> OpenPerfDataRawInput(std::unique_ptr<MappedFile> input,
                                                             const ClockOptions& clock) {
  auto parts = OpenPerfDataParts(std::move(input), clock);
  if (!parts) return parts.error();
  return MakePerfDataRawSource(std::move(parts.value()));
}

}  // namespace

Result<std::unique_ptr<RawEventSource>> OpenPerfDataRaw(const std::string& path, const ClockOptions& clock) {
  auto in = MappedFile::Open(path);
  if (!in) return in.error();
  return OpenPerfDataRawInput(std::move(in.value()), clock);
}

Result<std::unique_ptr<RawEventSource>> OpenPerfDataRaw(std::unique_ptr<MappedFile> input, const ClockOptions& clock) {
  return OpenPerfDataRawInput(std::move(input), clock);
}

Result<std::unique_ptr<RawEventSource>> OpenPerfDataRawBuffer(std::span<const uint8_t> bytes, const std::string& name) {
  return OpenPerfDataRawInput(MappedFile::View(bytes, name), {});
}

}  // namespace exitscope
