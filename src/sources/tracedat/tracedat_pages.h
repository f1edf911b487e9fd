// The part of the trace.dat reader shared by the sequential reader (tracedat_reader.cc) and the
// parallel one (tracedat_slices.cc): the opened file's immutable facts (page layout, clock, codec)
// and one CPU's ring-buffer pages as a CpuRecordStream, optionally cut to a time window.
// In: a parsed trace.dat. Out: records of one CPU in file order, ts in ns; anomalies as counts in
// the caller's PageCounters. Assumption (windows only): uncompressed data, and a CPU's timestamps
// never go back — the walker checks that and flags the window when they do.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/diagnostics.h"
#include "model/raw_event.h"
#include "model/raw_event.h"
#include "sources/tracedat/chunk_prefetcher.h"
#include "sources/mapped_file.h"
#include "sources/tracedat/ring_buffer_page.h"
#include "sources/tracedat/tracedat_header.h"

namespace exitscope {

// Converts raw ring-buffer timestamps to ns the way trace-cmd does (trace-input.c timestamp_calc):
// (ts * mult) >> shift when the clock needs it (TSC2NSEC, --tsc-khz, uptime; sources/trace_clock.h),
// then the OFFSET option.
struct ClockConversion {
  uint64_t mult = 0;
  uint32_t shift = 0;
  int64_t offset_ns = 0;
  uint64_t ToNs(uint64_t ts) const {
    if (mult) ts = static_cast<uint64_t>((static_cast<unsigned __int128>(ts) * mult) >> shift);
    return ts + offset_ns;
  }
};

// What every CPU stream of one file reads and nobody writes once the file is open.
struct TraceDatShared {
  std::unique_ptr<MappedFile> file;
  PageLayout page_layout;
  uint32_t page_size = 0;
  ClockConversion clock;
  Codec codec = Codec::kNone;
  uint32_t pid_offset = 4, pid_size = 4;  // common_pid, bound from the formats
  // Type id -> 1: not handed out (RawEventSource::LeaveOut). One entry per u16 common_type, so the
  // walk indexes it without a bounds check; SetLeftOut sizes it.
  std::vector<uint8_t> left_out = std::vector<uint8_t>(kTypeIds);
  void SetLeftOut(std::vector<uint8_t> type_ids) {
    type_ids.resize(kTypeIds);  // ids past u16 (damaged formats) match no record
    left_out = std::move(type_ids);
  }
  static constexpr size_t kTypeIds = 65536;
  // Bytes the sequential walk reads at a time with pread, per CPU stream: 64 pages, less once
  // kSequentialReadBudget is shared by more than 32 streams (at 256 KB each, a 256-CPU host's
  // buffers were 64 MB), but 8 pages at least. ShareSequentialReads sets it.
  uint64_t sequential_read_bytes = kSequentialReadMax;
  void ShareSequentialReads(size_t streams) {
    sequential_read_bytes = BudgetShare(kSequentialReadBudget, streams, kSequentialReadMin, kSequentialReadMax);
  }
  static constexpr uint64_t kSequentialReadMax = 256 << 10, kSequentialReadMin = 32 << 10;
  static constexpr uint64_t kSequentialReadBudget = 8 << 20;
};

// Parses the header of `file` into *shared, *meta, *formats (header anomalies into *diagnostics);
// the layout says where each CPU's pages are. Errors: damaged header, impossible page size.
Result<TraceDatLayout> OpenTraceDatShared(std::unique_ptr<MappedFile> file, const std::string& path,
                                          TraceDatShared* shared, TraceMeta* meta, FormatRegistry* formats,
                                          Diagnostics* diagnostics, const ClockOptions& clock = {});

// Records ts_ns as CPU `cpu`'s first record unless an earlier one is there: a damaged header may give
// two data streams one CPU number, and both readers must then keep the same (the earlier) one.
inline void KeepEarliestFirstTs(std::map<int32_t, uint64_t>* first_ts_ns, int32_t cpu, uint64_t ts_ns) {
  auto [it, added] = first_ts_ns->emplace(cpu, ts_ns);
  if (!added) it->second = std::min(it->second, ts_ns);
}

// The first and last timestamp of every record a reader handed out (kvm or not): the trace's span.
struct RecordSpan {
  uint64_t first = UINT64_MAX, last = 0;
  void Add(uint64_t ts_ns) {
    first = std::min(first, ts_ns);
    last = std::max(last, ts_ns);
  }
  void Add(const RecordSpan& o) {
    first = std::min(first, o.first);
    last = std::max(last, o.last);
  }
  void Store(TraceMeta* meta) const {
    if (first > last) return;
    meta->first_ts_ns = first;
    meta->last_ts_ns = last;
  }
};

// What reading pages found; one per reader (sequential) or per slice (parallel), summed at the end.
struct PageCounters {
  RingBufferStats stats;
  uint64_t bytes_done = 0;
  uint64_t corrupt_chunks = 0;
  uint64_t chunks_truncated = 0;
  uint64_t size_mismatches = 0;   // compressed: CPUs whose size the chunk count overruled
  uint64_t count_mismatches = 0;  // compressed: CPUs whose chunk count the size overruled
  void Add(const PageCounters& o);
  // The non-zero counts as Diagnostics (names under "tracedat.").
  void Report(Diagnostics* d) const;
};

// A time slice [lo_ns, hi_ns) of one CPU's uncompressed pages, starting at page first_page: records
// before lo_ns are walked (to keep the time checks) but not handed out; the first record at or past
// hi_ns ends the stream. A page's stats count in the window that holds its last record, a loss
// marker goes with the record the sequential reader attaches it to: each lands in exactly one slice.
struct TimeWindow {
  bool active = false;  // false: the whole stream, as the sequential reader reads it
  uint64_t lo_ns = 0;
  uint64_t hi_ns = UINT64_MAX;  // UINT64_MAX: no end (the last slice holds a stamp of all ones too)
  bool Below(uint64_t ts_ns) const { return hi_ns == UINT64_MAX || ts_ns < hi_ns; }
  uint64_t first_page = 0;
  uint64_t end_page_hint = 0;  // the window likely ends before this page: read in one call up to it
};

class TraceDatCpuStream : public CpuRecordStream {
 public:
  // `prefetcher` null: pages read in place from the mapping, or, given `read_buffer` (a mapped file),
  // read with pread into it (the caller keeps it from stream to stream: fresh pages are dear), so
  // no page of the file is mapped in. `window` only without a prefetcher.
  TraceDatCpuStream(const TraceDatShared* shared, PageCounters* counters, const TraceDatCpuData& data,
                    ChunkPrefetcher* prefetcher, const TimeWindow& window = {},
                    std::vector<uint8_t>* read_buffer = nullptr);
  bool Advance() override;

  int32_t cpu() const { return cpu_; }
  uint64_t first_ts_ns = ~0ull;     // first record handed out (or left out)
  uint64_t left_out_count = 0;      // records of a TraceDatShared::left_out type, not handed out
  uint64_t left_out_went_back = 0;  // ... of them older than a record before them on this CPU
  // Time span of the records handed out or left out (not of those a window walks past).
  RecordSpan span() const {
    if (first_ts_ns == ~0ull) return {};
    return RecordSpan{std::min(first_ts_ns, back_min_ts_ns_), max_ts_ns_};
  }
  // Windows: the last page walked (from first_page), whether the stream stopped at hi_ns (rather
  // than running out of pages) and whether time went back in what it walked.
  uint64_t last_page_walked() const { return next_page_ == 0 ? 0 : next_page_ - 1; }
  bool stopped_at_hi() const { return stopped_at_hi_; }
  bool went_back() const { return went_back_; }
  // Windows read with pread: `bytes` holds this CPU's pages from page `first` on (the caller read
  // them in one call, with the page before the window, beside the other CPUs'); the walk takes them
  // from there and reads into the read buffer only past them.
  void UsePagesRead(uint64_t first, std::span<const uint8_t> bytes) {
    if (!read_) return;
    given_begin_ = first * shared_->page_size;
    given_ = bytes.first(std::min<uint64_t>(bytes.size(), pages_.size() - std::min(given_begin_, pages_.size())));
  }

 private:
  bool NextPage();
  // The page at pages_[pos] as read into *read_ (pread), reading on when it is not there.
  std::span<const uint8_t> ReadPage(uint64_t pos, uint32_t size);
  void EndPage();
  void ReleaseConsumed();
  // Where region_ starts in the file.
  uint64_t RegionOffset() const { return static_cast<uint64_t>(region_.data() - shared_->file->bytes().data()); }
  bool NextChunk();

  const TraceDatShared* shared_;
  PageCounters* counters_;
  int32_t cpu_;
  ChunkPrefetcher* prefetcher_;  // null: uncompressed pages, read in place
  TimeWindow window_;
  bool windowed_ = false;
  int prefetch_stream_ = -1;
  uint64_t prefaulted_ = 0;   // uncompressed, sequential: pages_ below this were mapped in (Prefault)
  bool end_counted_ = false;  // the chunk table's end (StreamEnd) is counted once
  std::span<const uint8_t> region_;
  std::span<const uint8_t> pages_;
  size_t page_pos_ = 0;
  uint64_t next_page_ = 0;                  // index of the next page of region_ (uncompressed)
  std::vector<uint8_t>* read_ = nullptr;    // pages_ read with pread (null: in place)
  uint64_t read_begin_ = 0, read_end_ = 0;  // the bytes of pages_ *read_ holds
  std::span<const uint8_t> given_;          // UsePagesRead's: pages_ from given_begin_ on
  uint64_t given_begin_ = 0;
  ChunkPrefetcher::Chunk chunk_;
  uint64_t consumed_ = 0, released_ = 0;  // bytes of region_ read / handed back to the kernel
  PageWalker walker_;
  RingBufferStats page_stats_;    // the current page's (windows: kept only if the page ends here)
  uint64_t page_last_ts_ns_ = 0;  // last record (or the page stamp) of the current page
  bool in_page_ = false;
  uint64_t last_page_ts_ = 0;
  uint64_t last_ts_ns_ = 0;  // windows: the last record walked, for the time check
  bool went_back_ = false;
  bool stopped_at_hi_ = false;
  LostEvents page_lost_;  // loss marker of the current page, not yet handed out
  // span(): the latest stamp, and the least of those below it (time ascends: one compare a record).
  uint64_t max_ts_ns_ = 0, back_min_ts_ns_ = ~0ull;
};

}  // namespace exitscope
