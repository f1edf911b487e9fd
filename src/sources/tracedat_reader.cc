#include "sources/tracedat_reader.h"

#include <cstring>
#include <vector>

#include "decode/tracing_data.h"
#include "sort/cpu_merger.h"
#include "sources/chunk_prefetcher.h"
#include "sources/byte_reader.h"
#include "sources/mapped_file.h"
#include "sources/ring_buffer_page.h"
#include "sources/tracedat_header.h"

namespace exitscope {
namespace {

// Converts raw ring-buffer timestamps to ns the way trace-cmd does (trace-input.c timestamp_calc):
// TSC2NSEC's (ts * mult) >> shift when the option exists, then the OFFSET option.
struct ClockConversion {
  uint32_t mult = 0, shift = 0;
  int64_t offset_ns = 0;
  uint64_t ToNs(uint64_t ts) const {
    if (mult) ts = static_cast<uint64_t>((static_cast<unsigned __int128>(ts) * mult) >> shift);
    return ts + offset_ns;
  }
};

// Compressed data below this size is decompressed inline: a thread would cost more than it saves.
constexpr uint64_t kPrefetchMinBytes = 1 << 20;

// How much of the file is read before its pages are dropped from memory.
constexpr uint64_t kReleaseStepBytes = 4 << 20;

struct SharedState {
  std::unique_ptr<MappedFile> file;
  PageLayout page_layout;
  uint32_t page_size = 0;
  ClockConversion clock;
  Codec codec = Codec::kNone;
  uint32_t pid_offset = 4, pid_size = 4;  // common_pid, bound from the formats
  RingBufferStats stats;
  uint64_t bytes_done = 0;
  uint64_t corrupt_chunks = 0;
  uint64_t chunks_truncated = 0;
};

// One CPU's pages: in place from the mapping, or chunk by chunk through a decompressor.
class TraceDatCpuStream : public CpuRecordStream {
 public:
  TraceDatCpuStream(SharedState* state, const TraceDatCpuData& data, ChunkPrefetcher* prefetcher)
      : state_(state), cpu_(data.cpu), prefetcher_(prefetcher) {
    auto bytes = state->file->bytes();
    uint64_t off = std::min<uint64_t>(data.offset, bytes.size());
    // trace-cmd 3.1 records the compressed size without the leading 4-byte chunk count.
    uint64_t want = data.size + (prefetcher ? 4 : 0);
    uint64_t size = std::min<uint64_t>(want, bytes.size() - off);
    if (size < data.size) ++state->chunks_truncated;
    region_ = bytes.subspan(off, size);
    if (prefetcher_) {
      prefetch_stream_ = prefetcher_->AddStream(region_);
    } else {
      pages_ = region_;
    }
  }

  bool Advance() override {
    PageRecord rec;
    while (!walker_.Next(&rec)) {
      if (!NextPage()) return false;
    }
    head.ts_ns = state_->clock.ToNs(rec.ts);
    if (first_ts_ns == ~0ull) first_ts_ns = head.ts_ns;
    head.cpu = cpu_;
    head.payload = rec.payload;
    head.type_id = rec.payload.size() >= 2 ? static_cast<uint16_t>(LoadLe(rec.payload.data(), 2)) : 0;
    head.tid = rec.payload.size() >= state_->pid_offset + state_->pid_size
                   ? static_cast<int32_t>(LoadLe(rec.payload.data() + state_->pid_offset, state_->pid_size))
                   : -1;
    return true;
  }

  int32_t cpu() const { return cpu_; }
  uint64_t first_ts_ns = ~0ull;

 private:
  bool NextPage() {
    const uint32_t page_size = state_->page_size;
    while (page_pos_ + page_size > pages_.size() || page_size == 0) {
      if (page_size && page_pos_ < pages_.size()) ++state_->stats.truncated_pages;  // partial last page
      if (!prefetcher_ || !NextChunk()) return false;
    }
    auto page = pages_.subspan(page_pos_, page_size);
    page_pos_ += page_size;
    if (!prefetcher_) {
      state_->bytes_done += page_size;
      consumed_ = page_pos_;
      ReleaseConsumed();
    }
    uint64_t missed = 0;
    walker_.Begin(page, state_->page_layout, &state_->stats, &missed);
    uint64_t page_ts = state_->clock.ToNs(walker_.page_ts());
    if (page_ts < last_page_ts_) ++state_->stats.ts_backwards;
    last_page_ts_ = page_ts;
    if (missed) {
      lost.cpu = cpu_;
      lost.ts_ns = page_ts;
      lost.count = missed == ~0ull ? 0 : missed;
    }
    return true;
  }

  // Drops the file pages already read from the resident set, a few MB at a time, so peak memory
  // stays flat however big the trace (a read-only mapping's pages count as resident otherwise).
  void ReleaseConsumed() {
    if (consumed_ - released_ < kReleaseStepBytes) return;
    uint64_t region_off = static_cast<uint64_t>(region_.data() - state_->file->bytes().data());
    state_->file->Release(region_off + released_, consumed_ - released_);
    released_ = consumed_;
  }

  bool NextChunk() {
    bool truncated = false;
    bool more = prefetcher_->Next(prefetch_stream_, &chunk_, &truncated);
    if (!more) {
      if (truncated && !truncation_counted_) { ++state_->chunks_truncated; truncation_counted_ = true; }
      return false;
    }
    state_->bytes_done += chunk_.file_bytes;
    consumed_ += chunk_.file_bytes;
    ReleaseConsumed();
    page_pos_ = 0;
    if (chunk_.corrupt) ++state_->corrupt_chunks;  // skip this chunk, keep going with the next one
    pages_ = chunk_.bytes;
    return true;
  }

  SharedState* state_;
  int32_t cpu_;
  ChunkPrefetcher* prefetcher_;  // null: uncompressed pages, read in place
  int prefetch_stream_ = -1;
  bool truncation_counted_ = false;
  std::span<const uint8_t> region_;
  std::span<const uint8_t> pages_;
  size_t page_pos_ = 0;
  ChunkPrefetcher::Chunk chunk_;
  uint64_t consumed_ = 0, released_ = 0;  // bytes of region_ read / handed back to the kernel
  PageWalker walker_;
  uint64_t last_page_ts_ = 0;
};

class TraceDatReader : public RawEventSource {
 public:
  const TraceMeta& meta() const override { return meta_; }
  const FormatRegistry& formats() const override { return formats_; }
  Diagnostics& diagnostics() override { return diagnostics_; }
  uint64_t bytes_done() const override { return state_.bytes_done; }
  uint64_t bytes_total() const override { return data_bytes_; }

  bool Next(RawEvent* event, LostEvents* lost) override {
    if (merger_.Next(event, lost)) return true;
    if (!finished_) Finish();
    return false;
  }

  Status Open(const std::string& path) {
    auto file = MappedFile::Open(path);
    if (!file.ok()) return file.error();
    return Open(std::move(file.value()), path);
  }

  Status Open(std::unique_ptr<MappedFile> file, const std::string& path) {
    state_.file = std::move(file);
    meta_.source_path = path;
    auto layout = ParseTraceDatHeader(state_.file->bytes(), path, &formats_, &meta_, &diagnostics_);
    if (!layout.ok()) return layout.error();
    const TraceDatLayout& l = *layout;
    meta_.source_format = "trace.dat v" + std::to_string(l.version);
    if (l.version >= 7) {
      meta_.source_format += l.codec == Codec::kZlib ? " (zlib)" : l.codec == Codec::kZstd ? " (zstd)" : " (uncompressed)";
    }
    state_.page_layout = PageLayout::FromHeaderPage(l.header_page);
    state_.page_size = l.page_size;
    state_.codec = l.codec;
    state_.clock = {l.tsc_mult, l.tsc_shift, l.ts_offset_ns};
    if (l.tsc_mult && meta_.clock != "tsc2nsec") meta_.clock += " (tsc2nsec)";
    for (const auto& f : formats_.all()) {
      if (const FieldFormat* pid = f->Field("common_pid")) {
        state_.pid_offset = pid->offset;
        state_.pid_size = pid->size;
        break;
      }
    }
    if (l.page_size == 0 || l.page_size > (1u << 24)) {
      return MakeError(kExitDataErr, "tracedat.bad-page-size",
                       "'" + path + "' claims a ring-buffer page size of " + std::to_string(l.page_size),
                       "the header is damaged; re-record the trace");
    }
    if (l.data_compressed) prefetcher_ = std::make_unique<ChunkPrefetcher>(l.codec);
    for (const auto& c : l.cpus) {
      if (c.size == 0) continue;
      data_bytes_ += c.size;
      auto s = std::make_unique<TraceDatCpuStream>(&state_, c, prefetcher_.get());
      streams_.push_back(s.get());
      merger_.Add(std::move(s));
    }
    // A second thread pays off once there is more than a few chunks' worth of data.
    if (prefetcher_ && data_bytes_ >= kPrefetchMinBytes) prefetcher_->Start();
    return Status::Ok();
  }

 private:
  void Finish() {
    finished_ = true;
    for (const TraceDatCpuStream* s : streams_) {
      if (s->first_ts_ns != ~0ull) meta_.cpu_first_ts_ns[s->cpu()] = s->first_ts_ns;
    }
    state_.stats.Report(&diagnostics_, "tracedat");
    if (state_.stats.missed_events || state_.stats.missed_unknown) meta_.buffer_overwritten = true;
    if (merger_.out_of_order()) {
      diagnostics_.Bump("sort.out_of_order", Severity::kError,
                        "records older than one already emitted (a CPU clock stepped back)",
                        merger_.out_of_order());
    }
    if (state_.corrupt_chunks) {
      diagnostics_.Bump("tracedat.corrupt_chunk", Severity::kError,
                        "compressed data chunks that did not decompress; their events are lost",
                        state_.corrupt_chunks);
    }
    if (state_.chunks_truncated) {
      diagnostics_.Bump("tracedat.truncated_data", Severity::kDataLoss,
                        "CPU data running past the end of the file (file cut short)", state_.chunks_truncated);
    }
  }

  SharedState state_;
  TraceMeta meta_;
  FormatRegistry formats_;
  Diagnostics diagnostics_;
  CpuMerger merger_;
  // Declared after merger_ so it stops (and joins its thread) before the streams go away.
  std::unique_ptr<ChunkPrefetcher> prefetcher_;
  std::vector<TraceDatCpuStream*> streams_;
  uint64_t data_bytes_ = 0;
  bool finished_ = false;
};

}  // namespace

bool LooksLikeTraceDat(std::span<const uint8_t> head) {
  return head.size() >= kTracingMagicSize && std::memcmp(head.data(), kTracingMagic, kTracingMagicSize) == 0;
}

Result<std::unique_ptr<RawEventSource>> OpenTraceDat(const std::string& path) {
  auto reader = std::make_unique<TraceDatReader>();
  if (Status s = reader->Open(path); !s.ok()) return s.error();
  return std::unique_ptr<RawEventSource>(std::move(reader));
}

Result<std::unique_ptr<RawEventSource>> OpenTraceDatBuffer(std::span<const uint8_t> bytes,
                                                           const std::string& name) {
  auto reader = std::make_unique<TraceDatReader>();
  if (Status s = reader->Open(MappedFile::View(bytes, name), name); !s.ok()) return s.error();
  return std::unique_ptr<RawEventSource>(std::move(reader));
}

}  // namespace exitscope
