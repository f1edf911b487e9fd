#include "pipeline/tracedat_slices.h"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "decode/kvm_decoder.h"
#include "sort/cpu_merger.h"
#include "base/byte_reader.h"
#include "base/huge_pages.h"
#include "base/thread_priority.h"
#include "pipeline/tracedat_reader.h"
#include "sources/tracedat/tracedat_pages.h"

namespace exitscope {
namespace {

// Page stamps sampled per slice to place the cuts: enough that slices come out about even.
constexpr uint64_t kSamplesPerSlice = 4;
// Pages without records a slice's first page steps back over to find a loss marker they hold.
constexpr uint64_t kMaxRecordlessPages = 64;
// The smallest kvm record a slice is likely to be made of (kvm_entry: 4-byte header, 24-byte payload).
constexpr uint64_t kSmallestRecordBytes = 28;
// Slices decoded ahead of the one being handed out, per worker.
constexpr size_t kAheadPerWorker = 2;
// Nice steps the workers take below the caller's thread. The caller's thread hands the slices on in
// order and pairs and aggregates them (or advises on them): when it is the slower side, workers and
// caller outnumber the cores and a worker running ahead takes a third of its core from it. Below it,
// a worker runs when the caller's thread waits for a slice, and shares its core at 3:1 otherwise.
// `advise` on an uncompressed 10.1 M-event trace, 2 cores, paired runs: 0.46 -> 0.37 s at 5 (0.36 s
// at 10, 0.35 s at 19); `report`, whose workers are the slower side, unchanged. 5, not more: on a
// busy host the workers still get a fair part of a core beside other processes' threads.
constexpr int kWorkerNice = 5;

// A worker's read buffers. A slice's pages of every CPU are read (pread) into one, each CPU's window
// and the page before it after the other's: a slice's worth and a few pages per CPU (5 MB when 256
// CPUs are busy), kept from slice to slice while it takes at most kKeptPagesBytes (fresh pages are
// dear). A buffer per CPU, grown to its window, kept while they fit a budget and trimmed past it,
// took turns growing where load moves from CPU to CPU: 40 % of a 256-CPU report, in zero-filling
// and faulting in. A walk that goes on past its window (time went back) reads into its CPU's own
// `past` buffer, kept while they take at most kKeptPastBytes.
constexpr size_t kKeptPagesBytes = 8 << 20;
constexpr size_t kKeptPastBytes = 4 << 20;

class SliceReads {
 public:
  explicit SliceReads(size_t cpus) : past(cpus) {}

  // Room for `bytes` of pages; what it held before is gone. Not zero-filled: pread writes what is used.
  uint8_t* Pages(size_t bytes) {
    if (bytes > pages_.size()) {
      pages_ = HugePages();  // first: a slice's worth need not be held twice
      pages_ = HugePages(bytes);
    }
    return pages_.data();
  }

  void Trim() {
    if (pages_.size() > kKeptPagesBytes) {
      pages_ = HugePages();
    }
    size_t bytes = 0;
    for (const auto& r : past) bytes += r.capacity();
    if (bytes <= kKeptPastBytes) return;
    for (auto& r : past) {
      if (r.capacity() > kKeptPastBytes / past.size()) std::vector<uint8_t>().swap(r);
    }
  }

  std::vector<std::vector<uint8_t>> past;  // per CPU

 private:
  HugePages pages_;  // base/huge_pages.h
};

// A CPU's first record and the latest record of its last whole page, in ns (Idle).
struct TimeBounds {
  uint64_t first_record_ns = 0, last_record_ns = UINT64_MAX;
};

// How one slice walks one CPU's pages: planned (Plan), then what the checks after the run need.
struct CpuWalk {
  bool planned = false;  // false: not walked (no whole page but in the last slice, or Idle)
  uint64_t first_page = 0, end_hint = 0;
  uint64_t last_page = 0;
  bool stopped_at_hi = false;
  bool went_back = false;
  bool start_unsure = false;  // more pages without records before first_page than it looks back over
  uint64_t first_ts_ns = ~0ull;
};

struct Slice {
  uint64_t lo_ns = 0, hi_ns = UINT64_MAX;
  HugeVector<KvmEvent> events;  // base/huge_pages.h: a fault per 2 MB, not per 4 KB
  std::vector<LossAt> losses;   // marker handed out with events[index]
  LostEvents tail_lost;         // after the last event: for the next slice
  uint64_t skipped = 0;         // records that are not kvm events
  DecodeAnomalies anomalies;
  uint64_t out_of_order = 0;
  RecordSpan span;  // of every record, kvm or not
  PageCounters counters;
  std::vector<CpuWalk> walks;
  bool done = false;
};

class SlicedTraceDatSource : public KvmEventSource {
 public:
  ~SlicedTraceDatSource() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  const TraceMeta& meta() const override { return meta_; }
  Diagnostics& diagnostics() override { return diagnostics_; }
  uint64_t bytes_done() const override { return counters_.bytes_done; }
  uint64_t bytes_total() const override { return data_bytes_; }

  // Opens the file; false in *sliced when it is not worth (or not possible) to slice it.
  Status Open(const std::string& path, unsigned threads, uint64_t slice_bytes, const ClockOptions& clock, bool one_pass,
              bool* sliced) {
    *sliced = false;
    threads_ = threads;
    auto file = MappedFile::Open(path);
    if (!file.ok()) return file.error();
    auto layout = OpenTraceDatShared(std::move(file.value()), path, &shared_, &meta_, &formats_, &diagnostics_, clock);
    if (!layout.ok()) return layout.error();
    layout_ = *layout;
    if (one_pass || layout->data_compressed || threads < 2) return Status::Ok();
    for (const auto& c : layout->cpus) {
      if (c.size == 0) continue;
      cpus_.push_back(c);
    }
    // What the file holds, not what its header claims: a damaged size must not make slices of
    // nothing (nor billions of samples to place them).
    for (size_t c = 0; c < cpus_.size(); ++c) data_bytes_ += Pages(c) * shared_.page_size;
    uint64_t n = data_bytes_ / std::max<uint64_t>(slice_bytes, shared_.page_size);
    events_per_slice_ = data_bytes_ / std::max<uint64_t>(n, 1) / kSmallestRecordBytes + 1;
    if (n < 4) return Status::Ok();
    decoder_ = std::make_unique<KvmDecoder>(formats_, meta_.isa_hint, &diagnostics_);
    shared_.SetLeftOut(decoder_->UndecodedIds());  // as DecodingSource has the sequential reader do
    Cut(n);
    *sliced = true;
    max_ahead_ = kAheadPerWorker * threads;
    for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
    return Status::Ok();
  }

  size_t slice_count() const { return slices_.size(); }
  size_t largest_slice() const { return largest_slice_; }

  // When Open said not to slice: the sequential reader over what Open parsed (no second parse).
  std::unique_ptr<KvmEventSource> Sequential() {
    return MakeDecodingSource(MakeTraceDatReader(std::move(shared_), std::move(meta_), std::move(formats_),
                                                 std::move(diagnostics_), layout_, threads_ > 1 ? threads_ - 1 : 1));
  }

  bool Next(KvmEvent* event, LostEvents* lost) override {
    if (lost) lost->cpu = -1;
    for (;;) {
      if (cur_ && pos_ < cur_->events.size()) {
        for (; loss_pos_ < cur_->losses.size() && cur_->losses[loss_pos_].index == pos_; ++loss_pos_) {
          CombineLost(&carry_lost_, cur_->losses[loss_pos_].lost);
        }
        if (carry_lost_.cpu >= 0) {
          if (lost) *lost = carry_lost_;
          carry_lost_.cpu = -1;
        }
        *event = cur_->events[pos_++];
        return true;
      }
      if (!NextSlice()) return false;
    }
  }

  // The rest of the current slice in place (a decoded slice is one batch), its markers re-indexed.
  bool NextBatch(KvmEventBatch* batch) override {
    for (;;) {
      if (cur_ && pos_ < cur_->events.size()) {
        batch_losses_.clear();
        for (; loss_pos_ < cur_->losses.size(); ++loss_pos_) {
          LossAt l = cur_->losses[loss_pos_];
          l.index -= static_cast<uint32_t>(pos_);
          if (carry_lost_.cpu >= 0) {  // markers of earlier slices go with this batch's first event
            if (l.index == 0) CombineLost(&carry_lost_, l.lost);
            batch_losses_.push_back({0, carry_lost_});
            carry_lost_.cpu = -1;
            if (l.index == 0) continue;
          }
          batch_losses_.push_back(l);
        }
        if (carry_lost_.cpu >= 0) {
          batch_losses_.push_back({0, carry_lost_});
          carry_lost_.cpu = -1;
        }
        batch->events = std::span<const KvmEvent>(cur_->events).subspan(pos_);
        batch->refs = {};
        batch->losses = batch_losses_;
        pos_ = cur_->events.size();
        return true;
      }
      if (!NextSlice()) {
        batch->events = {};
        batch->refs = {};
        batch->losses = {};
        return false;
      }
    }
  }

 private:
  // Retires the slice handed out and waits for the next; false after the last.
  bool NextSlice() {
    if (cur_) Retire();
    if (consumed_ == slices_.size()) {
      if (!finished_) Finish();
      return false;
    }
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [&] { return slices_[consumed_].done; });
    cur_ = &slices_[consumed_];
    pos_ = loss_pos_ = 0;
    return true;
  }

  // Whole pages of CPU c that the file holds (a file cut short holds fewer than its header says).
  uint64_t Pages(size_t c) const {
    uint64_t file_size = shared_.file->bytes().size();
    uint64_t offset = std::min<uint64_t>(cpus_[c].offset, file_size);
    return std::min<uint64_t>(cpus_[c].size, file_size - offset) / shared_.page_size;
  }

  // The stamp of page p of CPU c, in ns (0 when the file ends before it). Read by pread from a
  // mapped file: no page of it is mapped in (probes far ahead of the walk would map, and keep
  // resident, 64 KB each).
  uint64_t PageTs(size_t c, uint64_t p) const {
    auto bytes = shared_.file->bytes();
    const PageLayout& l = shared_.page_layout;
    uint64_t at = cpus_[c].offset + p * shared_.page_size + l.ts_offset;
    if (at + l.ts_size > bytes.size() || l.ts_size > 8) return 0;
    uint8_t buf[8];
    shared_.file->ReadAt(at, l.ts_size, buf);
    return shared_.clock.ToNs(LoadLe(buf, l.ts_size));
  }

  // Pages of CPU c stamped before t, counted on from `from` (known to be stamped before an earlier
  // time): a slice's pages follow its predecessor's, so the search gallops from there (probes 1, 1,
  // 2, 4 … pages on) and then halves; the samples taken by Cut bound it, so the probes stay near
  // the pages the slice reads anyway. Plan's (under plan_mu_).
  uint64_t PagesBefore(size_t c, uint64_t t, uint64_t from) {
    const std::vector<PageSample>& sm = samples_[c];
    // First sample stamped at or past t: the answer lies before it and after the one before.
    auto it = std::lower_bound(sm.begin(), sm.end(), t, [](const PageSample& a, uint64_t x) { return a.ts_ns < x; });
    uint64_t lo = std::max(from, it == sm.begin() ? 0 : std::prev(it)->page + 1);
    uint64_t hi = std::max(lo, it == sm.end() ? Pages(c) : it->page);
    for (uint64_t step = 1, grow = 0; lo < hi; step <<= grow, grow = 1) {
      uint64_t probe = std::min(lo + step, hi) - 1;
      if (PlanTs(c, probe) >= t) {
        hi = probe;
        break;
      }
      lo = probe + 1;
    }
    while (lo < hi) {
      uint64_t mid = lo + (hi - lo) / 2;
      if (PlanTs(c, mid) < t)
        lo = mid + 1;
      else
        hi = mid;
    }
    return lo;
  }

  // PageTs, keeping each CPU's last probe: the page found stamped at or past one slice's end is
  // where the next slice's search begins (half the probes of a loaded many-CPU host's slices).
  uint64_t PlanTs(size_t c, uint64_t p) {
    PageSample& last = last_probe_[c];
    if (last.page != p) last = {p, PageTs(c, p)};
    return last.ts_ns;
  }

  // Where each CPU's walk of slice s starts (the last page stamped before lo_ns: the first that may
  // hold a record at or past it) and likely ends (the page hi_ns falls in, and one more), found in
  // slice order from where the slice before ended. A search per CPU per slice from the samples alone
  // took ~12 probes of a page stamp each: 740 k preads on a 256-CPU trace of 100 k pages.
  void Plan(Slice& s) {
    s.walks.resize(cpus_.size());
    for (size_t c = 0; c < cpus_.size(); ++c) {
      CpuWalk& w = s.walks[c];
      // A CPU without a whole page has nothing to walk; the last window alone counts what is there
      // (a partial page, data cut short). Hundreds of idle CPUs would otherwise cost a stream each
      // per slice.
      w.planned = (Pages(c) > 0 || s.hi_ns == UINT64_MAX) && !Idle(c, s);
      if (!w.planned) continue;
      uint64_t& stamped_before = pages_before_lo_[c];
      w.first_page = stamped_before == 0 ? 0 : stamped_before - 1;
      if (s.hi_ns == UINT64_MAX) {
        w.end_hint = Pages(c);
        continue;
      }
      stamped_before = PagesBefore(c, s.hi_ns, stamped_before);
      w.end_hint = std::min(Pages(c), (stamped_before == 0 ? 0 : stamped_before - 1) + 2);
    }
  }

  // Plans every slice up to i, in order, whichever worker gets there first.
  void PlanUpTo(size_t i) {
    std::lock_guard<std::mutex> lock(plan_mu_);
    for (; planned_ <= i; ++planned_) Plan(slices_[planned_]);
  }

  // Where the walk of a window from `page` starts: there, or earlier over pages without records.
  // A loss marker on such a page waits for the next record (trace-cmd's and our sequential rule),
  // which may be this window's first; starting after the page that set it would drop it in both
  // windows. `before`: the bytes of the page before `page` when the caller read them. *unsure: more
  // than kMaxRecordlessPages in a row, not looked at — the cut is not trusted.
  uint64_t WalkStart(size_t c, uint64_t page, std::span<const uint8_t> before, bool* unsure) const {
    for (uint64_t back = 0; page > 0; --page) {
      if (back == 0 && !before.empty() ? HasRecords(before) : PageHasRecords(c, page - 1)) break;
      if (++back > kMaxRecordlessPages) {
        *unsure = true;
        break;
      }
    }
    return page;
  }

  // Whether `page` holds a record; given `first` and `latest`, the first one's time in ns and, walking
  // them all, the latest one's.
  bool HasRecords(std::span<const uint8_t> page, uint64_t* first = nullptr, uint64_t* latest = nullptr) const {
    RingBufferStats ignored;
    uint64_t missed = 0;
    PageWalker walker;
    PageRecord record;
    if (!walker.Begin(page, shared_.page_layout, &ignored, &missed) || !walker.Next(&record)) return false;
    if (first) *first = shared_.clock.ToNs(record.ts);
    if (latest) {
      *latest = shared_.clock.ToNs(record.ts);
      while (walker.Next(&record)) *latest = std::max(*latest, shared_.clock.ToNs(record.ts));
    }
    return true;
  }

  // Page p of CPU c, read (pread) on its own.
  std::vector<uint8_t> OnePage(size_t c, uint64_t p) const {
    std::vector<uint8_t> read(shared_.page_size);
    ReadPages(c, p, p + 1, read.data());
    return read;
  }

  bool PageHasRecords(size_t c, uint64_t p) const { return HasRecords(OnePage(c, p)); }

  // The first record of CPU c's first page and the latest of its last whole page, in ns (0 and
  // UINT64_MAX when they hold none): what Idle goes by. Not the first page's stamp: a record may lie
  // before it (an absolute time stamp), and a window skipped for it would lose that record unseen.
  TimeBounds Bounds(size_t c) const {
    TimeBounds b;
    if (!HasRecords(OnePage(c, 0), &b.first_record_ns)) b.first_record_ns = 0;
    if (!HasRecords(OnePage(c, Pages(c) - 1), nullptr, &b.last_record_ns)) b.last_record_ns = UINT64_MAX;
    return b;
  }

  // Whether CPU c has no record in slice s's window, as far as its first and last page say: its
  // first record lies at or past hi_ns, or its last page's records all lie before lo_ns.
  // Such a walk would read a page or two and hand out nothing: on a host of hundreds of CPUs whose
  // load moves, most CPUs most of the time. The last slice walks every CPU (it counts partial pages).
  // A clock that went back is still caught: the slice before stopped at this one's lo_ns (Retire).
  bool Idle(size_t c, const Slice& s) const {
    return s.hi_ns != UINT64_MAX && Pages(c) > 0 &&
           (s.hi_ns <= bounds_[c].first_record_ns || s.lo_ns > bounds_[c].last_record_ns);
  }

  // Pages [first, end) of CPU c to `out`, in one pread.
  void ReadPages(size_t c, uint64_t first, uint64_t end, uint8_t* out) const {
    if (end > first)
      shared_.file->ReadAt(cpus_[c].offset + first * shared_.page_size, (end - first) * shared_.page_size, out);
  }

  // The pages a walk reads first: from the page before its first page (which says whether it starts
  // earlier, WalkStart) to its end hint.
  std::pair<uint64_t, uint64_t> WindowPages(size_t c, const CpuWalk& w) const {
    const uint64_t before = w.first_page == 0 ? 0 : w.first_page - 1;
    return {before, std::max(before, std::min(w.end_hint, Pages(c)))};
  }

  // Places n-1 cuts at quantiles of sampled page stamps, so slices hold about the same data.
  void Cut(uint64_t n) {
    uint64_t total_pages = 0;
    for (size_t c = 0; c < cpus_.size(); ++c) total_pages += Pages(c);
    std::vector<uint64_t> all;
    samples_.assign(cpus_.size(), {});
    for (size_t c = 0; c < cpus_.size(); ++c) {
      uint64_t pages = Pages(c);
      if (pages == 0) continue;
      uint64_t k = std::max<uint64_t>(1, n * kSamplesPerSlice * pages / std::max<uint64_t>(total_pages, 1));
      // Staggered from CPU to CPU: on a busy host every CPU fills its pages at about the same rate,
      // so page p of each is stamped at about the same time. Sampled at the same pages, 256 CPUs'
      // samples bunched into k instants, most cuts fell inside the bunches and the few slices between
      // them held ~1.2 M events each (380 MB).
      const uint64_t n_cpus = cpus_.size();
      for (uint64_t i = 0; i < k; ++i) {
        uint64_t page = static_cast<uint64_t>(static_cast<unsigned __int128>(i * n_cpus + c) * pages / (k * n_cpus));
        samples_[c].push_back({page, PageTs(c, page)});
        all.push_back(samples_[c].back().ts_ns);
      }
    }
    std::sort(all.begin(), all.end());
    std::vector<uint64_t> cuts;
    for (uint64_t i = 1; i < n && !all.empty(); ++i) {
      uint64_t t = all[i * all.size() / n];
      // All ones means "no end" to a window (TimeWindow::Below): never a cut.
      if (t > 0 && t != UINT64_MAX && (cuts.empty() || t > cuts.back())) cuts.push_back(t);
    }
    slices_.resize(cuts.size() + 1);
    pages_before_lo_.assign(cpus_.size(), 0);
    last_probe_.assign(cpus_.size(), {UINT64_MAX, 0});
    bounds_.assign(cpus_.size(), {});
    for (size_t c = 0; c < cpus_.size(); ++c) {
      if (Pages(c) > 0) bounds_[c] = Bounds(c);
    }
    for (size_t i = 0; i < slices_.size(); ++i) {
      slices_[i].lo_ns = i == 0 ? 0 : cuts[i - 1];
      slices_[i].hi_ns = i == cuts.size() ? UINT64_MAX : cuts[i];
    }
  }

  void Work() {
    LowerThreadPriority(kWorkerNice);
    SliceReads reads(cpus_.size());
    for (;;) {
      size_t i;
      HugeVector<KvmEvent> buffer;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return stop_ || next_ >= slices_.size() || next_ < consumed_ + max_ahead_; });
        if (stop_ || next_ >= slices_.size()) return;
        i = next_++;
        if (!free_.empty()) {
          buffer = std::move(free_.back());
          free_.pop_back();
        }
      }
      // Room for a slice of the smallest records up front: growing by doubling copied each slice's
      // events once or twice and was a tenth of a short report's time. Recycled buffers keep theirs.
      if (buffer.capacity() == 0) buffer.reserve(events_per_slice_);
      slices_[i].events = std::move(buffer);
      PlanUpTo(i);
      Decode(slices_[i], &reads);
      reads.Trim();
      {
        std::lock_guard<std::mutex> lock(mu_);
        slices_[i].done = true;
      }
      cv_.notify_all();
    }
  }

  // Walks, merges and decodes one slice — the sequential reader's loop on a time window — reading
  // each CPU's pages into *reads.
  void Decode(Slice& s, SliceReads* reads) {
    const uint32_t ps = shared_.page_size;
    uint64_t bytes = 0;
    for (size_t c = 0; c < cpus_.size(); ++c) {
      if (!s.walks[c].planned) continue;
      auto [before, end] = WindowPages(c, s.walks[c]);
      bytes += (end - before) * ps;
    }
    CpuMerger merger;
    std::vector<TraceDatCpuStream*> streams(cpus_.size(), nullptr);
    uint8_t* at = reads->Pages(bytes);
    for (size_t c = 0; c < cpus_.size(); ++c) {
      CpuWalk& w = s.walks[c];
      if (!w.planned) continue;
      // One pread for the pages the walk likely takes and the page before them: with hundreds of
      // CPUs a slice holds a page or two of each, and a call per page (and a probe of the one
      // before) was most of the report's time.
      auto [before, end] = WindowPages(c, w);
      const std::span<const uint8_t> read(at, (end - before) * ps);
      ReadPages(c, before, end, at);
      at += read.size();
      w.first_page = WalkStart(c, w.first_page, read.first(std::min<size_t>(read.size(), ps)), &w.start_unsure);
      TimeWindow window{true, s.lo_ns, s.hi_ns, w.first_page, w.end_hint};
      auto stream =
          std::make_unique<TraceDatCpuStream>(&shared_, &s.counters, cpus_[c], nullptr, window, &reads->past[c]);
      if (w.first_page >= before) stream->UsePagesRead(before, read);
      streams[c] = stream.get();
      merger.Add(std::move(stream));
    }
    RawEvent raw;
    LostEvents l, acc;
    acc.cpu = -1;
    while (merger.Next(&raw, &l)) {
      CombineLost(&acc, l);
      s.events.emplace_back();
      if (!decoder_->Decode(raw, &s.events.back(), &s.anomalies)) {
        s.events.pop_back();
        ++s.skipped;
        continue;
      }
      if (acc.cpu >= 0) {
        s.losses.push_back({static_cast<uint32_t>(s.events.size() - 1), acc});
        acc.cpu = -1;
      }
    }
    s.tail_lost = acc;
    s.out_of_order = merger.out_of_order();
    for (size_t c = 0; c < cpus_.size(); ++c) {
      if (!streams[c]) continue;
      CpuWalk& w = s.walks[c];
      w.last_page = streams[c]->last_page_walked();
      w.stopped_at_hi = streams[c]->stopped_at_hi();
      w.went_back = streams[c]->went_back();
      w.first_ts_ns = streams[c]->first_ts_ns;
      s.skipped += streams[c]->left_out_count;
      s.out_of_order += streams[c]->left_out_went_back;
      s.span.Add(streams[c]->span());
    }
  }

  // The slice handed out: fold its counts in, check it against the one before, recycle its memory.
  void Retire() {
    Slice& s = *cur_;
    largest_slice_ = std::max(largest_slice_, s.events.size());
    CombineLost(&carry_lost_, s.tail_lost);
    counters_.Add(s.counters);
    skipped_ += s.skipped;
    anomalies_.Add(s.anomalies);
    out_of_order_ += s.out_of_order;
    span_.Add(s.span);
    for (size_t c = 0; c < cpus_.size(); ++c) {
      const CpuWalk& w = s.walks[c];
      if (w.went_back || w.start_unsure) cut_unsafe_ = true;
      // The slice before stopped at this slice's start time: this one must have walked from that
      // page or earlier, else records between the two walks were never looked at.
      // Or it was left out as idle (Plan): then the one before must not have seen a record past it.
      if (consumed_ > 0) {
        const CpuWalk& prev = slices_[consumed_ - 1].walks[c];
        if (prev.stopped_at_hi && (!w.planned || w.first_page > prev.last_page)) cut_unsafe_ = true;
      }
      if (w.first_ts_ns != ~0ull) KeepEarliestFirstTs(&first_ts_ns_, cpus_[c].cpu, w.first_ts_ns);
    }
    if (consumed_ > 0) slices_[consumed_ - 1].walks = {};
    HugeVector<KvmEvent> buffer = std::move(s.events);
    buffer.clear();
    s.losses = {};
    {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(std::move(buffer));
      ++consumed_;
    }
    cv_.notify_all();
    cur_ = nullptr;
  }

  void Finish() {
    finished_ = true;
    for (const auto& [cpu, ts] : first_ts_ns_) meta_.cpu_first_ts_ns[cpu] = ts;
    span_.Store(&meta_);
    counters_.Report(&diagnostics_);
    if (counters_.stats.missed_events || counters_.stats.missed_unknown) meta_.buffer_overwritten = true;
    if (out_of_order_) {
      diagnostics_.Bump(DiagId::kSortOutOfOrder, out_of_order_);
    }
    if (skipped_) {
      diagnostics_.Bump(DiagId::kDecodeSkippedEvents, skipped_);
    }
    anomalies_.Report(&diagnostics_);
    if (cut_unsafe_) {
      diagnostics_.Bump(DiagId::kTracedatSlicesOutOfOrder);
    }
  }

  TraceDatShared shared_;
  TraceDatLayout layout_;
  // Open's: a compressed file's sequential reader decompresses on threads_ - 1 threads beside the
  // caller's. On 2 cores a second one paid only in this VM's slow state (one vCPU ~1.4x slower):
  // a 2-CPU zstd trace, paired, 1.7 -> 1.34 s there, 0.85 -> 0.97 s in the fast state.
  unsigned threads_ = 1;
  TraceMeta meta_;
  FormatRegistry formats_;
  Diagnostics diagnostics_;
  std::unique_ptr<KvmDecoder> decoder_;
  std::vector<TraceDatCpuData> cpus_;
  uint64_t data_bytes_ = 0;
  uint64_t events_per_slice_ = 0;  // capacity a new slice buffer starts with
  std::vector<Slice> slices_;
  struct PageSample {
    uint64_t page, ts_ns;
  };
  std::vector<std::vector<PageSample>> samples_;  // per CPU, by page (Cut)
  // Plan's, under plan_mu_: slices planned, and per CPU the pages stamped before the next one's lo_ns.
  std::mutex plan_mu_;
  size_t planned_ = 0;
  std::vector<uint64_t> pages_before_lo_;
  std::vector<PageSample> last_probe_;  // per CPU (PlanTs)
  std::vector<TimeBounds> bounds_;      // per CPU (Idle)

  // Shared with the workers, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  size_t next_ = 0;      // next slice a worker takes
  size_t consumed_ = 0;  // slices handed out completely
  size_t max_ahead_ = 0;
  bool stop_ = false;
  std::vector<HugeVector<KvmEvent>> free_;
  std::vector<std::thread> workers_;

  // The caller's thread only.
  Slice* cur_ = nullptr;
  size_t pos_ = 0, loss_pos_ = 0;
  std::vector<LossAt> batch_losses_;
  LostEvents carry_lost_{-1, 0, 0};
  PageCounters counters_;
  uint64_t skipped_ = 0, out_of_order_ = 0;
  DecodeAnomalies anomalies_;
  RecordSpan span_;
  std::map<int32_t, uint64_t> first_ts_ns_;  // per CPU, its first record handed out
  bool cut_unsafe_ = false;
  bool finished_ = false;
  size_t largest_slice_ = 0;  // events of the largest slice handed out
};

}  // namespace

Result<std::unique_ptr<KvmEventSource>> OpenTraceDatSliced(const std::string& path, unsigned threads,
                                                           uint64_t slice_bytes, const ClockOptions& clock,
                                                           bool one_pass) {
  auto sliced = std::make_unique<SlicedTraceDatSource>();
  bool worth = false;
  if (Status s = sliced->Open(path, threads, slice_bytes ? slice_bytes : kDefaultSliceBytes, clock, one_pass, &worth);
      !s.ok()) {
    return s.error();
  }
  if (worth) return std::unique_ptr<KvmEventSource>(std::move(sliced));
  return sliced->Sequential();
}

size_t SliceCount(const KvmEventSource& source) {
  auto* sliced = dynamic_cast<const SlicedTraceDatSource*>(&source);
  return sliced ? sliced->slice_count() : 0;
}

size_t LargestSlice(const KvmEventSource& source) {
  auto* sliced = dynamic_cast<const SlicedTraceDatSource*>(&source);
  return sliced ? sliced->largest_slice() : 0;
}

bool ReadsAgainSequentially(const Diagnostics& d) { return d.Count(DiagId::kTracedatSlicesOutOfOrder) != 0; }

Status ReadWithSequentialFallback(std::unique_ptr<KvmEventSource>* source, const std::string& path, InputFormat format,
                                  const std::function<void(KvmEventSource&)>& read, const ClockOptions& clock) {
  read(**source);
  if (!ReadsAgainSequentially((*source)->diagnostics())) return Status::Ok();
  auto again = OpenKvmEventSource(path, format, 1, clock);
  if (!again.ok()) return again.error();
  *source = std::move(again.value());
  read(**source);
  return Status::Ok();
}

}  // namespace exitscope
