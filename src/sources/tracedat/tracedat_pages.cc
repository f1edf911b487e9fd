#include "sources/tracedat/tracedat_pages.h"

#include <algorithm>

#include "base/byte_reader.h"
#include "sources/trace_clock.h"

namespace exitscope {
namespace {

// TSC2NSEC: the kernel's clocksource shift (mult/shift pair for ns) is well under 64.
constexpr uint32_t kMaxTscShift = 64;

// How much of the file is read before its pages are dropped from memory.
constexpr uint64_t kReleaseStepBytes = 4 << 20;
// Read with pread past a window's first read (or its hint): 16 pages of 4 KB at a time; a whole
// CPU's stream (the sequential reader) reads more at a time (TraceDatShared::sequential_read_bytes):
// it holds one such buffer per CPU, freed once the stream ends.
constexpr uint64_t kReadBytes = 64 << 10;

}  // namespace

Result<TraceDatLayout> OpenTraceDatShared(std::unique_ptr<MappedFile> file, const std::string& path,
                                          TraceDatShared* shared, TraceMeta* meta, FormatRegistry* formats,
                                          Diagnostics* diagnostics, const ClockOptions& clock) {
  shared->file = std::move(file);
  meta->source_path = path;
  auto layout = ParseTraceDatHeader(shared->file->bytes(), path, formats, meta, diagnostics);
  if (!layout.ok()) return layout.error();
  const TraceDatLayout& l = *layout;
  meta->source_format = "trace.dat v" + std::to_string(l.version);
  if (l.version >= 7) {
    meta->source_format += l.codec == Codec::kZlib   ? " (zlib)"
                           : l.codec == Codec::kZstd ? " (zstd)"
                                                     : " (uncompressed)";
  }
  shared->page_layout = PageLayout::FromHeaderPage(l.header_page);
  shared->page_size = l.page_size;
  shared->codec = l.codec;
  uint32_t file_mult = l.tsc_mult;
  if (file_mult && l.tsc_shift >= kMaxTscShift) {
    // A shift this large makes every time 0 (and is undefined for the 128-bit product): damage.
    diagnostics->Bump(DiagId::kTracedatBadTsc2nsec);
    file_mult = 0;
  }
  ClockPlan plan = PlanClock(meta->clock, file_mult, l.tsc_shift, clock);
  ApplyClockPlan(plan, meta);
  shared->clock = {plan.mult, plan.shift, l.ts_offset_ns};
  for (const auto& f : formats->all()) {
    if (const FieldFormat* pid = f->Field("common_pid")) {
      shared->pid_offset = pid->offset;
      shared->pid_size = pid->size;
      break;
    }
  }
  if (l.page_size == 0 || l.page_size > (1u << 24)) {
    return MakeError(kExitDataErr, "tracedat.bad-page-size",
                     "'" + path + "' claims a ring-buffer page size of " + std::to_string(l.page_size),
                     "the header is damaged; re-record the trace");
  }
  return layout;
}

void PageCounters::Add(const PageCounters& o) {
  stats.Add(o.stats);
  bytes_done += o.bytes_done;
  corrupt_chunks += o.corrupt_chunks;
  chunks_truncated += o.chunks_truncated;
  size_mismatches += o.size_mismatches;
  count_mismatches += o.count_mismatches;
}

void PageCounters::Report(Diagnostics* d) const {
  stats.Report(d);
  if (corrupt_chunks) {
    d->Bump(DiagId::kTracedatCorruptChunk, corrupt_chunks);
  }
  if (chunks_truncated) {
    d->Bump(DiagId::kTracedatTruncatedData, chunks_truncated);
  }
  if (size_mismatches) d->Bump(DiagId::kTracedatCpuSizeMismatch, size_mismatches);
  if (count_mismatches) d->Bump(DiagId::kTracedatChunkCountMismatch, count_mismatches);
}

TraceDatCpuStream::TraceDatCpuStream(const TraceDatShared* shared, PageCounters* counters, const TraceDatCpuData& data,
                                     ChunkPrefetcher* prefetcher, const TimeWindow& window,
                                     std::vector<uint8_t>* read_buffer)
    : shared_(shared),
      counters_(counters),
      cpu_(data.cpu),
      prefetcher_(prefetcher),
      window_(window),
      read_(!prefetcher && shared->file->mapped() ? read_buffer : nullptr) {
  auto bytes = shared->file->bytes();
  uint64_t off = std::min<uint64_t>(data.offset, bytes.size());
  // trace-cmd 3.1 records the compressed size without the leading 4-byte chunk count.
  uint64_t want = data.size + (prefetcher ? kChunkCountSize : 0);
  uint64_t size = std::min<uint64_t>(want, bytes.size() - off);
  if (size < data.size && window_.hi_ns == UINT64_MAX) ++counters->chunks_truncated;
  if (prefetcher_) {
    // The chunk table may run past the size (the prefetcher checks both claims as it reads).
    region_ = bytes.subspan(off);
    prefetch_stream_ = prefetcher_->AddStream(region_, data.size);
  } else {
    region_ = bytes.subspan(off, size);
    pages_ = region_;
    windowed_ = window_.active;
    page_pos_ = std::min<uint64_t>(window_.first_page * shared->page_size, pages_.size());
    next_page_ = window_.first_page;
    consumed_ = released_ = page_pos_;
  }
  page_lost_.cpu = -1;
}

bool TraceDatCpuStream::Advance() {
  PageRecord rec;
  for (;;) {
    while (!in_page_ || !walker_.Next(&rec)) {
      EndPage();
      if (!NextPage()) return false;
    }
    uint64_t ts_ns = shared_->clock.ToNs(rec.ts);
    page_last_ts_ns_ = ts_ns;
    if (windowed_) {
      if (ts_ns < last_ts_ns_) went_back_ = true;
      last_ts_ns_ = ts_ns;
      // A marker pending here belongs to the record it would precede: outside the window, so is it.
      if (ts_ns < window_.lo_ns) {
        page_lost_.cpu = -1;
        continue;
      }
      if (!window_.Below(ts_ns)) {
        page_lost_.cpu = -1;
        in_page_ = false;  // the page ends in a later window, which counts it
        pages_ = {};       // and this stream is done for good
        stopped_at_hi_ = true;
        return false;
      }
    }
    if (page_lost_.cpu >= 0) {
      lost = page_lost_;
      page_lost_.cpu = -1;
    }
    if (first_ts_ns == ~0ull) first_ts_ns = ts_ns;
    if (ts_ns >= max_ts_ns_)
      max_ts_ns_ = ts_ns;
    else
      back_min_ts_ns_ = std::min(back_min_ts_ns_, ts_ns);
    const uint16_t type_id = rec.payload.size() >= 2 ? static_cast<uint16_t>(LoadLe(rec.payload.data(), 2)) : 0;
    // Left out before the merge: about a third of a `-e kvm` recording is events no report decodes
    // (kvm_fpu, kvm_write_tsc_offset …), and merging them cost more than walking them.
    if (shared_->left_out[type_id] && lost.cpu < 0) {
      ++left_out_count;
      // Not merged, so the merger cannot see it go back in time: a clock that stepped back is
      // still counted (sort.out_of_order) for records left out.
      if (ts_ns < max_ts_ns_) ++left_out_went_back;
      continue;
    }
    head.ts_ns = ts_ns;
    head.cpu = cpu_;
    head.payload = rec.payload;
    head.type_id = type_id;
    head.tid = rec.payload.size() >= uint64_t{shared_->pid_offset} + shared_->pid_size
                   ? static_cast<int32_t>(LoadLe(rec.payload.data() + shared_->pid_offset, shared_->pid_size))
                   : -1;
    return true;
  }
}

void TraceDatCpuStream::EndPage() {
  if (!in_page_) return;
  in_page_ = false;
  if (!windowed_ || (page_last_ts_ns_ >= window_.lo_ns && window_.Below(page_last_ts_ns_))) {
    counters_->stats.Add(page_stats_);
  }
}

bool TraceDatCpuStream::NextPage() {
  const uint32_t page_size = shared_->page_size;
  while (page_pos_ + page_size > pages_.size() || page_size == 0) {
    // A partial last page; in windows, only the last one (which always reads to the end) counts it.
    if (page_size && page_pos_ < pages_.size() && window_.hi_ns == UINT64_MAX) ++counters_->stats.truncated_pages;
    if (!prefetcher_ || !NextChunk()) {
      pages_ = {};
      page_pos_ = 0;
      // The sequential walk's buffer is its own for the whole read; a window's is reused by the next.
      if (read_ && !windowed_) std::vector<uint8_t>().swap(*read_);
      return false;
    }
  }
  if (!prefetcher_ && !windowed_ && !read_ && page_pos_ >= prefaulted_) {
    // The sequential walk only: a time slice's pages end where the next slice's begin, and those
    // may be released already (mapped in again, they would stay resident). A quarter of the
    // usual window: every CPU's stream holds one (a 64-CPU host's trace.dat: 32 MB).
    prefaulted_ = std::min<uint64_t>(pages_.size(), page_pos_ + MappedFile::kPrefaultBytes / 4);
    shared_->file->Prefault(RegionOffset() + page_pos_, prefaulted_ - page_pos_);
  }
  auto page = read_ ? ReadPage(page_pos_, page_size) : pages_.subspan(page_pos_, page_size);
  page_pos_ += page_size;
  if (!prefetcher_) {
    ++next_page_;
    counters_->bytes_done += page_size;
    consumed_ = page_pos_;
    if (!read_) ReleaseConsumed();  // read pages were never mapped in
  }
  page_stats_ = {};
  uint64_t missed = 0;
  walker_.Begin(page, shared_->page_layout, &page_stats_, &missed);
  in_page_ = true;
  uint64_t page_ts = shared_->clock.ToNs(walker_.page_ts());
  if (page_stats_.zeroed_pages) return true;  // no stamp to check time against: counted as zeroed
  if (page_ts < last_page_ts_) ++page_stats_.ts_backwards;
  // A page stamped before the record or the page walked last: the cut by time may have put this
  // page (and its counts) in no window, or in two. Page stamps count even on pages without records.
  if (windowed_ && (page_ts < last_ts_ns_ || page_ts < last_page_ts_)) went_back_ = true;
  last_page_ts_ = page_ts;
  page_last_ts_ns_ = page_ts;
  if (missed) {
    page_lost_.cpu = cpu_;
    page_lost_.ts_ns = page_ts;
    page_lost_.count = missed == ~0ull ? 0 : missed;
  }
  return true;
}

std::span<const uint8_t> TraceDatCpuStream::ReadPage(uint64_t pos, uint32_t size) {
  if (pos >= given_begin_ && pos + size <= given_begin_ + given_.size())
    return given_.subspan(pos - given_begin_, size);
  if (pos < read_begin_ || pos + size > read_end_) {
    // The first read takes the pages the window likely walks, in one call, and no more: with
    // hundreds of CPUs a 1 MB slice holds a page or two of each, and reading 64 KB of every CPU
    // per slice read the file ~16 times over. Then a few pages at a time (a window reads on past its
    // hint only as far as its end time; the sequential walk, on).
    const uint64_t first = read_end_ == 0 ? window_.end_page_hint * size : 0;
    const uint64_t more = first > pos ? 0 : windowed_ ? kReadBytes : shared_->sequential_read_bytes;
    const uint64_t to = std::min<uint64_t>(pages_.size(), std::max<uint64_t>({pos + size, first, pos + more}));
    if (read_->size() < to - pos) read_->resize(to - pos);  // grown only: a buffer grown again is zeroed
    shared_->file->ReadAt(RegionOffset() + pos, to - pos, read_->data());
    read_begin_ = pos;
    read_end_ = to;
  }
  return std::span<const uint8_t>(read_->data() + (pos - read_begin_), size);
}

// Drops the file pages already read from the resident set, a few MB at a time, so peak memory
// stays flat however big the trace (a read-only mapping's pages count as resident otherwise).
void TraceDatCpuStream::ReleaseConsumed() {
  if (consumed_ - released_ < kReleaseStepBytes) return;
  shared_->file->Release(RegionOffset() + released_, consumed_ - released_);
  released_ = consumed_;
}

bool TraceDatCpuStream::NextChunk() {
  ChunkPrefetcher::StreamEnd end;
  bool more = prefetcher_->Next(prefetch_stream_, &chunk_, &end);
  if (!more) {
    if (!end_counted_) {
      counters_->chunks_truncated += end.truncated;
      counters_->size_mismatches += end.size_mismatch;
      counters_->count_mismatches += end.count_mismatch;
      end_counted_ = true;
    }
    return false;
  }
  counters_->bytes_done += chunk_.file_bytes;
  consumed_ += chunk_.file_bytes;
  ReleaseConsumed();  // the prefetcher preads its chunks: only a look-ahead over headers mapped pages
  page_pos_ = 0;
  if (chunk_.corrupt) ++counters_->corrupt_chunks;  // skip this chunk, keep going with the next one
  pages_ = chunk_.bytes;
  return true;
}

}  // namespace exitscope
