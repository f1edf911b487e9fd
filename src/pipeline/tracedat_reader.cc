#include "pipeline/tracedat_reader.h"

#include <cstring>
#include <vector>

#include "format/tracing_data.h"
#include "sort/cpu_merger.h"
#include "sources/tracedat/chunk_prefetcher.h"
#include "base/byte_reader.h"
#include "sources/mapped_file.h"
#include "sources/tracedat/ring_buffer_page.h"
#include "sources/tracedat/tracedat_header.h"
#include "sources/tracedat/tracedat_pages.h"

namespace exitscope {
namespace {

// Compressed data below this size is decompressed inline: a thread would cost more than it saves.
constexpr uint64_t kPrefetchMinBytes = 1 << 20;

class TraceDatReader : public RawEventSource {
 public:
  const TraceMeta& meta() const override { return meta_; }
  const FormatRegistry& formats() const override { return formats_; }
  Diagnostics& diagnostics() override { return diagnostics_; }
  uint64_t bytes_done() const override { return counters_.bytes_done; }
  uint64_t bytes_total() const override { return data_bytes_; }
  unsigned busy_threads() const override { return prefetch_threads_; }
  void LeaveOut(std::vector<uint8_t> type_ids) override { shared_.SetLeftOut(std::move(type_ids)); }
  uint64_t left_out() const override {
    uint64_t n = 0;
    for (const TraceDatCpuStream* s : streams_) n += s->left_out_count;
    return n;
  }

  bool Next(RawEvent* event, LostEvents* lost) override {
    if (merger_.Next(event, lost)) return true;
    if (!finished_) Finish();
    return false;
  }

  Status Open(const std::string& path, const ClockOptions& clock) {
    auto file = MappedFile::Open(path);
    if (!file.ok()) return file.error();
    return Open(std::move(file.value()), path, clock);
  }

  Status Open(std::unique_ptr<MappedFile> file, const std::string& path, const ClockOptions& clock = {}) {
    auto layout = OpenTraceDatShared(std::move(file), path, &shared_, &meta_, &formats_, &diagnostics_, clock);
    if (!layout.ok()) return layout.error();
    AddStreams(*layout);
    return Status::Ok();
  }

  // A file whose header OpenTraceDatShared already parsed.
  void Adopt(TraceDatShared shared, TraceMeta meta, FormatRegistry formats, Diagnostics diagnostics,
             const TraceDatLayout& layout, unsigned prefetch_threads) {
    shared_ = std::move(shared);
    meta_ = std::move(meta);
    formats_ = std::move(formats);
    diagnostics_ = std::move(diagnostics);
    AddStreams(layout, prefetch_threads);
  }

 private:
  void AddStreams(const TraceDatLayout& l, unsigned prefetch_threads = 1) {
    if (l.data_compressed) prefetcher_ = std::make_unique<ChunkPrefetcher>(l.codec, shared_.file.get());
    const uint64_t file_size = shared_.file->bytes().size();
    reads_.resize(l.cpus.size());  // not resized again: the streams keep pointers to these
    for (size_t i = 0; i < l.cpus.size(); ++i) {
      const auto& c = l.cpus[i];
      // A compressed CPU of size 0 may still hold chunks its count says (the prefetcher checks).
      const bool count_in_file = c.offset <= file_size && file_size - c.offset >= kChunkCountSize;
      if (c.size == 0 && !(l.data_compressed && count_in_file)) continue;
      data_bytes_ += c.size;
      auto s =
          std::make_unique<TraceDatCpuStream>(&shared_, &counters_, c, prefetcher_.get(), TimeWindow{}, &reads_[i]);
      streams_.push_back(s.get());
      merger_.Add(std::move(s));
    }
    shared_.ShareSequentialReads(streams_.size());
    // Prefetch threads pay off once there is more than a few chunks' worth of data.
    if (prefetcher_ && data_bytes_ >= kPrefetchMinBytes) {
      prefetcher_->Start(prefetch_threads);
      prefetch_threads_ = prefetch_threads;
    }
  }

  void Finish() {
    finished_ = true;
    RecordSpan span;  // of every record, kvm or not
    for (const TraceDatCpuStream* s : streams_) {
      if (s->first_ts_ns != ~0ull) KeepEarliestFirstTs(&meta_.cpu_first_ts_ns, s->cpu(), s->first_ts_ns);
      span.Add(s->span());
    }
    span.Store(&meta_);
    counters_.Report(&diagnostics_);
    if (counters_.stats.missed_events || counters_.stats.missed_unknown) meta_.buffer_overwritten = true;
    uint64_t out_of_order = merger_.out_of_order();
    for (const TraceDatCpuStream* s : streams_) out_of_order += s->left_out_went_back;
    if (out_of_order) diagnostics_.Bump(DiagId::kSortOutOfOrder, out_of_order);
  }

  TraceDatShared shared_;
  unsigned prefetch_threads_ = 0;  // started, decompressing ahead
  PageCounters counters_;
  TraceMeta meta_;
  FormatRegistry formats_;
  Diagnostics diagnostics_;
  CpuMerger merger_;
  // Declared after merger_ so it stops (and joins its thread) before the streams go away.
  std::unique_ptr<ChunkPrefetcher> prefetcher_;
  std::vector<TraceDatCpuStream*> streams_;
  std::vector<std::vector<uint8_t>> reads_;  // uncompressed pages read (pread), per CPU stream
  uint64_t data_bytes_ = 0;
  bool finished_ = false;
};

}  // namespace

bool LooksLikeTraceDat(std::span<const uint8_t> head) {
  return head.size() >= kTracingMagicSize && std::memcmp(head.data(), kTracingMagic, kTracingMagicSize) == 0;
}

Result<std::unique_ptr<RawEventSource>> OpenTraceDat(const std::string& path, const ClockOptions& clock) {
  auto reader = std::make_unique<TraceDatReader>();
  if (Status s = reader->Open(path, clock); !s.ok()) return s.error();
  return std::unique_ptr<RawEventSource>(std::move(reader));
}

Result<std::unique_ptr<RawEventSource>> OpenTraceDat(std::unique_ptr<MappedFile> file, const ClockOptions& clock) {
  auto reader = std::make_unique<TraceDatReader>();
  const std::string path = file->path();
  if (Status s = reader->Open(std::move(file), path, clock); !s.ok()) return s.error();
  return std::unique_ptr<RawEventSource>(std::move(reader));
}

std::unique_ptr<RawEventSource> MakeTraceDatReader(TraceDatShared shared, TraceMeta meta, FormatRegistry formats,
                                                   Diagnostics diagnostics, const TraceDatLayout& layout,
                                                   unsigned prefetch_threads) {
  auto reader = std::make_unique<TraceDatReader>();
  reader->Adopt(std::move(shared), std::move(meta), std::move(formats), std::move(diagnostics), layout,
                prefetch_threads);
  return reader;
}

Result<std::unique_ptr<RawEventSource>> OpenTraceDatBuffer(std::span<const uint8_t> bytes, const std::string& name) {
  auto reader = std::make_unique<TraceDatReader>();
  if (Status s = reader->Open(MappedFile::View(bytes, name), name); !s.ok()) return s.error();
  return std::unique_ptr<RawEventSource>(std::move(reader));
}

}  // namespace exitscope
