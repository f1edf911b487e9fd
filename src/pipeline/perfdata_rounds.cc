#include "pipeline/perfdata_rounds.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "base/check.h"
#include "base/huge_pages.h"
#include "base/sorted_runs.h"
#include "decode/kvm_decoder.h"
#include "sources/perfdata/perfdata_format.h"
#include "sources/perfdata/perfdata_reader.h"
#include "sources/perfdata/perfdata_source.h"

namespace exitscope {
namespace {

namespace pd = perfdata;

// Chunks parsed ahead of the one being merged beyond one per worker, so no worker waits for the
// merge while the caller's thread is off its core (workers and caller outnumber the cores). With
// 1 MB chunks in 4 KB pages, on 2 cores, 10.1 M events, paired runs: 1 beyond took 0.55 s, 2 0.50 s,
// 4 0.46 s, 8 0.45 s (peak RSS 24 -> 29 MB), 16 0.44 s (34 MB). Each chunk's store is now a huge
// page (2 MB resident, below), and chunks are 1.5 MB: 6 beyond holds about what 8 did, at 47 MB
// peak (8 at 1 MB chunks: 56 MB, no faster).
constexpr size_t kAheadBeyondWorkers = 6;
// Chunk stores kept for reuse (resident): as many as can be in flight (threads + kAheadBeyondWorkers,
// and the chunks of the two rounds not handed out yet: perf's rounds run to tens of MB, cut into
// parts), so no chunk maps a fresh one: 9-14 on the real and scaled dual-5000 recordings.
constexpr size_t kFreeBuffers = 64;
// The smallest kvm sample record likely (header, tid, time, cpu, raw size, a kvm_entry payload).
constexpr uint64_t kSmallestSampleBytes = 64;
// Events the caller's thread hands out per batch.
constexpr size_t kOutBatch = 4096;
// Entry::ref for records that carry no decoded event.
constexpr uint32_t kSkipped = 0xffffffffu;  // a sample that is not a kvm event
constexpr uint32_t kLostBit = 0x80000000u;  // a loss record: ref & ~kLostBit indexes Chunk::lost

// One record of a round, as PerfSampleStream's pending entry: sorted by (ts, offset).
struct Entry {
  uint64_t ts_ns;
  uint64_t offset;  // inside data(): unique, file order
  uint32_t chunk;
  uint32_t ref;  // index into Chunk::events, kSkipped, or kLostBit | index into Chunk::lost
};

// A lambda, not a function: passed to the sort and merge templates it inlines (a function pointer is
// called per comparison).
constexpr auto ByTime = [](const Entry& a, const Entry& b) {
  return a.ts_ns != b.ts_ns ? a.ts_ns < b.ts_ns : a.offset < b.offset;
};

struct LostRecord {
  int32_t cpu;
  bool prefix_ts;         // no trailer time: its time is the running maximum, which needs the chunks before
  uint64_t local_max_ns;  // the running maximum inside the chunk when it was read
  uint64_t count;
};

struct Round {
  uint32_t end;          // entries of this round end here (they start where the one before ends)
  bool part;             // the chunk ended inside the round: the next chunk goes on with it
  uint64_t max_ts_ns;    // of the round's samples (0: none)
  bool has_prefix_lost;  // holds a LostRecord with prefix_ts
  bool has_left_out;     // had samples that were left out: not an empty round (the release rule)
};

// Aligned to a cache line: a worker writes its chunk's vectors and stamps on every record while
// another worker writes the next chunk and the caller's thread counts down the one before
// (`remaining`). Packed, neighbours shared lines that moved between the cores on every record: the
// workers' parse took 0.62 s of CPU on 2 cores against 0.25 s on one, 0.26-0.45 s aligned (this VM
// has two speeds from run to run).
struct alignas(64) Chunk {
  uint64_t begin = 0, end = 0;  // inside data()
  // Its entries, then its events, in huge pages (base/huge_pages.h: a store in 4 KB pages cost
  // ~450 page faults at ~12 us each on this kind of VM; 6,500 in all took ~0.07 s of a report).
  HugePages store;
  HugeArray<KvmEvent> events;
  HugeArray<Entry> entries;
  std::vector<Round> rounds;
  std::vector<LostRecord> lost;
  uint64_t bad_samples = 0, size_mismatches = 0, without_raw = 0;
  uint64_t left_out = 0;  // samples of an undecoded type: neither sorted nor merged
  DecodeAnomalies anomalies;
  uint64_t first_ts_ns = UINT64_MAX, last_ts_ns = 0;  // of every sample, kvm or not
  unsigned worker = 0;                                // that parsed it
  size_t remaining = 0;                               // entries not handed out yet (caller's thread)
  bool done = false;
  std::vector<PerfDataFile::NameRecord> names;  // its COMM and FORK records, for meta() before it is merged
};

// Sorted entries where they lie: the part of a round a chunk holds, or what was not handed out yet.
struct Span {
  const Entry* begin;
  const Entry* end;
  size_t size() const { return static_cast<size_t>(end - begin); }
};

// Entries a merge writes whole, in huge pages: grows as needed, without keeping what it held.
class EntryRun {
 public:
  // Room for n entries, its size n: the caller writes each.
  Entry* Prepare(size_t n) {
    if (n > capacity_) {
      // All that is mapped counts as room (whole huge pages once that large): each growth maps
      // fresh memory, whose first write costs (a round of perf kvm stat's and what is held back
      // reach ~61 k entries here, one huge page).
      capacity_ = MappedHugePagesBytes(std::max({n, capacity_ * 2, kMinEntries}) * sizeof(Entry)) / sizeof(Entry);
      pages_ = HugePages(capacity_ * sizeof(Entry));
    }
    size_ = n;
    return data();
  }
  void clear() { size_ = 0; }
  Entry* data() const { return reinterpret_cast<Entry*>(pages_.data()); }
  size_t size() const { return size_; }
  Entry& operator[](size_t i) const { return data()[i]; }
  Span span(size_t from) const { return {data() + from, data() + size_}; }

 private:
  static constexpr size_t kMinEntries = 4096;
  HugePages pages_;
  size_t capacity_ = 0, size_ = 0;
};

// The spans, each sorted, merged into one order in `out`: two (what was held back and a round
// inside one chunk: two merges in three on the ×27 perf.data) in one std::merge; more (a round cut
// into parts: rounds of ~8 MB span 5-6 chunks) pairwise and bottom up, the first level reading
// the spans where they lie. Each entry is written once per halving of the spans. Copying them into
// one range, sorting it and keeping what was not handed out wrote each entry five to six times, on
// the thread that was the slower side. `cuts`: the caller's, reused.
void MergeSpans(std::span<const Span> spans, EntryRun* out, EntryRun* scratch, std::vector<size_t>* cuts) {
  size_t n = 0;
  for (const Span& s : spans) n += s.size();
  out->Prepare(n);
  if (spans.size() < 2) {
    if (n) std::copy(spans[0].begin, spans[0].end, out->data());
    return;
  }
  size_t levels = 0;
  for (size_t k = spans.size(); k > 1; k = (k + 1) / 2) ++levels;
  // The first level writes into `first`, the levels after it alternate between the two buffers:
  // with an odd number of levels the first writes into `out`, and the last does too.
  Entry* first = levels % 2 ? out->data() : scratch->Prepare(n);
  Entry* other = levels > 1 ? (levels % 2 ? scratch->Prepare(n) : out->data()) : nullptr;
  cuts->clear();
  Entry* at = first;
  for (size_t k = 0; k < spans.size(); k += 2) {
    cuts->push_back(static_cast<size_t>(at - first));
    const Span& a = spans[k];
    at = k + 1 < spans.size() ? std::merge(a.begin, a.end, spans[k + 1].begin, spans[k + 1].end, at, ByTime)
                              : std::copy(a.begin, a.end, at);
  }
  Entry* sorted = MergeRunsPairwise(first, other, cuts->data(), cuts->size(), n, ByTime);
  EXITSCOPE_CHECK(sorted == out->data());
}

// Chunks are allocated a block at a time as they are cut, at addresses that stay put (the caller's
// thread reads chunks while workers cut more).
constexpr size_t kChunkBlock = 64;

class ParallelPerfDataSource : public KvmEventSource {
 public:
  ~ParallelPerfDataSource() override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

  const TraceMeta& meta() const override { return parts_.file->meta(); }
  Diagnostics& diagnostics() override { return *parts_.diagnostics; }
  uint64_t bytes_done() const override {
    return parts_.file->data_offset() + (merged_chunk_ < cut_count_.load(std::memory_order_acquire)
                                             ? chunk(merged_chunk_).begin
                                             : parts_.file->records_end());
  }
  uint64_t bytes_total() const override { return parts_.file->file_size(); }

  // False in *parallel when the file is better read by the sequential reader (parts_ kept for it).
  // The records are walked as they are read, chunk by chunk (PerfDataFile::OpenChunked): the file
  // is read once, not walked first at open (0.09 s of a 0.45 s report of a 1 GB perf.data here).
  Status Open(std::unique_ptr<MappedFile> input, unsigned threads, uint64_t chunk_bytes, const ClockOptions& clock,
              bool* parallel) {
    *parallel = false;
    auto parts = OpenPerfDataParts(std::move(input), clock, /*chunked=*/true);
    if (!parts.ok()) return parts.error();
    parts_ = std::move(parts.value());
    PerfDataFile& f = *parts_.file;
    // Pipe mode: the sequential reader (its header records come first, and it cannot be read again).
    if (!f.scan_pending()) return Status::Ok();
    // One thread, or fewer than 4 chunks' worth of records (threads would cost more than they
    // save): no worker, the caller's thread cuts and parses each chunk as it needs it. The file is
    // still read once, by pread, where the sequential reader walks it at open and then reads it
    // again through the mapping (a page fault per 4 KB).
    if (threads < 2 || f.data().size() / chunk_bytes < 4) threads = 0;
    chunk_bytes_ = chunk_bytes;
    // Cuts lie at least chunk_bytes apart, and a record takes 8 bytes at least.
    blocks_.resize((f.data().size() / std::max<uint64_t>(chunk_bytes, 8) + 2) / kChunkBlock + 1);
    // A chunk ends at the first record end chunk_bytes past its start: at most a record (u16 size)
    // more; room for that many of the smallest samples likely, so no chunk outgrows its store. The
    // entries come first and the events after them: a chunk of perf kvm stat's ~100-byte records
    // (1.5 MB: ~16 k) writes only the store's first 2 MB huge page, one of smaller records runs on
    // into the second (resident then, and reused like the first) rather than into fresh pages.
    most_events_ = static_cast<size_t>((chunk_bytes + 65536) / kSmallestSampleBytes) + 1;
    entries_bytes_ = (most_events_ * sizeof(Entry) + 63) & ~size_t{63};
    store_bytes_ = entries_bytes_ + most_events_ * sizeof(KvmEvent);
    decoder_ = std::make_unique<KvmDecoder>(parts_.formats, f.meta().isa_hint, parts_.diagnostics.get());
    left_out_ids_ = decoder_->UndecodedIds();  // as the sequential reader leaves them out
    *parallel = true;
    max_ahead_ = threads + kAheadBeyondWorkers;
    free_.resize(std::max(threads, 1u));
    for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this, i] { Work(i); });
    return Status::Ok();
  }

  size_t chunk_count() const { return std::max<size_t>(cut_count_.load(std::memory_order_acquire), 1); }
  std::unique_ptr<KvmEventSource> Sequential() { return MakeDecodingSource(MakePerfDataRawSource(std::move(parts_))); }

  bool Next(KvmEvent* event, LostEvents* lost) override {
    if (lost) lost->cpu = -1;
    if (out_pos_ >= out_events_.size()) {
      if (!Fill()) return false;
      out_pos_ = out_loss_pos_ = 0;
    }
    if (out_loss_pos_ < out_losses_.size() && out_losses_[out_loss_pos_].index == out_pos_) {
      if (lost) *lost = out_losses_[out_loss_pos_].lost;
      ++out_loss_pos_;
    }
    *event = *out_events_[out_pos_++];
    return true;
  }

  // The events where their chunks hold them (no copy of each into a run): the chunks stay until
  // the next call (RetireChunks at Fill's start).
  bool NextBatch(KvmEventBatch* batch) override {
    bool any = Fill();
    out_pos_ = out_events_.size();
    batch->events = {};
    batch->refs = out_events_;
    batch->losses = out_losses_;
    return any;
  }

 private:
  // ---- workers ----

  // What a worker keeps across chunks.
  struct WorkerBuffers {
    std::vector<Entry> scratch;  // SortAscendingRuns's
    HugeVector<uint8_t> bytes;   // the chunk's records, read
  };

  void Work(unsigned worker) {
    WorkerBuffers buffers;
    while (CutAndParse(worker, &buffers, /*wait=*/true)) {
    }
  }

  // Cuts the next chunk and parses it: false when none is left (or the reader stops). A worker
  // waits its turn and for room ahead of the merge (`wait`); the caller's thread, when there is no
  // worker, cuts only when it needs the chunk.
  bool CutAndParse(unsigned worker, WorkerBuffers* buffers, bool wait) {
    const PerfDataFile& f = *parts_.file;
    std::vector<Entry>& scratch = buffers->scratch;
    HugeVector<uint8_t>& bytes = buffers->bytes;
    size_t i;
    Chunk* c;
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (wait) {
        cv_.wait(lock, [&] {
          return stop_ || cut_ended_ ||
                 (!cutting_ && cut_count_.load(std::memory_order_relaxed) < merged_chunk_ + max_ahead_);
        });
      }
      if (stop_ || cut_ended_) return false;
      // One worker cuts at a time (the walk goes on from where the last cut ended); the others parse.
      cutting_ = true;
      i = cut_count_.load(std::memory_order_relaxed);
      EXITSCOPE_CHECK(i / kChunkBlock < blocks_.size());
      if (!blocks_[i / kChunkBlock]) blocks_[i / kChunkBlock] = std::make_unique<Chunk[]>(kChunkBlock);
      c = &chunk(i);
      c->worker = worker;
      // Its own buffers first: their lines may still be in this core's caches.
      for (size_t k = 0; k < free_.size(); ++k) {
        auto& list = free_[(worker + k) % free_.size()];
        if (list.empty()) continue;
        c->store = std::move(list.back());
        list.pop_back();
        --free_count_;
        break;
      }
    }
    // The chunk's records read (once: the walk that finds its end reads them for the parse).
    const uint8_t* base = f.CutChunk(&scan_, chunk_bytes_, &bytes, &c->begin, &c->end, &c->names);
    {
      std::lock_guard<std::mutex> lock(mu_);
      cutting_ = false;
      if (scan_.ended) cut_ended_ = true;
      cut_count_.store(i + 1, std::memory_order_release);
    }
    cv_.notify_all();
    // Room for the largest chunk of the smallest samples likely up front, in one store the same
    // size for every chunk (a reused one is never outgrown but by a chunk of samples under 64 bytes).
    if (!c->store.data()) c->store = HugePages(store_bytes_);
    c->entries.Reset(reinterpret_cast<Entry*>(c->store.data()), most_events_);
    c->events.Reset(reinterpret_cast<KvmEvent*>(c->store.data() + entries_bytes_), most_events_);
    Parse(static_cast<uint32_t>(i), c, base, &scratch);
    {
      std::lock_guard<std::mutex> lock(mu_);
      c->done = true;
    }
    cv_.notify_all();
    return true;
  }

  // PerfSampleStream::ReadRound over every round of the chunk, each round then sorted by time.
  // `base`: the chunk's first byte, as CutChunk read it (pread into the worker's buffer: no page of
  // the file is mapped into the process, so none is faulted in or released), or in place.
  void Parse(uint32_t index, Chunk* c, const uint8_t* base, std::vector<Entry>* scratch) {
    const PerfDataFile& f = *parts_.file;
    // Read on every record, so copied here and not read through `this`: the caller's thread writes
    // members that may share their cache lines.
    const KvmDecoder& decoder = *decoder_;
    const std::span<const uint8_t> left_out_ids(left_out_ids_);
    uint64_t pos = c->begin, local_max = 0, round_max = 0;
    uint32_t round_start = 0;
    bool prefix_lost = false, left_out = false;
    auto close_round = [&](bool part) {
      Entry* entries = c->entries.data();
      SortAscendingRuns(entries + round_start, entries + c->entries.size(), ByTime, scratch);
      c->rounds.push_back({static_cast<uint32_t>(c->entries.size()), part, round_max, prefix_lost, left_out});
      round_start = static_cast<uint32_t>(c->entries.size());
      round_max = 0;
      prefix_lost = left_out = false;
    };
    bool open_round = false;
    while (pos < c->end) {
      const uint8_t* r = base + (pos - c->begin);
      const auto [type, size] = PerfDataFile::RecordHeaderAt(r);
      std::span<const uint8_t> body(r + pd::kRecordHeaderSize, size - pd::kRecordHeaderSize);
      uint64_t next = pos + size;
      open_round = true;
      switch (type) {
        case pd::kRecordSample: {
          PerfSample s;
          if (!f.ParseSampleFast(body, &s)) {
            ++(s.size_mismatch ? c->size_mismatches : c->bad_samples);
            break;
          }
          if (s.raw.size() < 2) {
            ++c->without_raw;
            break;
          }
          local_max = std::max(local_max, s.ts_ns);
          round_max = std::max(round_max, s.ts_ns);
          c->first_ts_ns = std::min(c->first_ts_ns, s.ts_ns);
          c->last_ts_ns = std::max(c->last_ts_ns, s.ts_ns);
          RawEvent raw;
          raw.ts_ns = s.ts_ns;
          raw.cpu = s.cpu;
          raw.tid = s.tid;
          raw.type_id = static_cast<uint16_t>(s.raw[0] | s.raw[1] << 8);  // common_type, u16 LE
          if (raw.type_id < left_out_ids.size() && left_out_ids[raw.type_id]) {
            ++c->left_out;
            left_out = true;
            break;
          }
          raw.payload = s.raw;
          // Decode writes the whole event: no zero-fill first.
          KvmEvent* event = c->events.append_uninitialized();
          uint32_t ref = static_cast<uint32_t>(c->events.size() - 1);
          if (!decoder.Decode(raw, event, &c->anomalies)) {
            c->events.pop_back();
            ref = kSkipped;
          }
          c->entries.push_back({s.ts_ns, pos, index, ref});
          break;
        }
        case pd::kRecordLost:
        case pd::kRecordLostSamples: {
          uint64_t ts = local_max;
          int32_t cpu = -1;
          bool has_ts = false;
          f.ParseSampleIdTrailer(body, &ts, &cpu, &has_ts);
          // LOST: u64 id, u64 lost; LOST_SAMPLES: u64 lost.
          const uint64_t at = pos + pd::kRecordHeaderSize + (type == pd::kRecordLost ? 8 : 0);
          uint64_t count = 0;
          if (at + 8 <= c->end) {
            std::memcpy(&count, base + (at - c->begin), 8);
          } else {
            count = f.LoadDataU64(at);  // a record cut short: what lies past it, as the sequential reader reads
          }
          c->lost.push_back({cpu, !has_ts, local_max, count});
          if (!has_ts) prefix_lost = true;
          c->entries.push_back({ts, pos, index, kLostBit | static_cast<uint32_t>(c->lost.size() - 1)});
          break;
        }
        case pd::kRecordFinishedRound:
          close_round(false);
          open_round = false;
          break;
        case pd::kRecordHeaderTracingData: next += PerfDataFile::TracingDataPaddedSize(body); break;
        default: break;
      }
      pos = next;
    }
    if (open_round) close_round(true);  // no FINISHED_ROUND at the chunk's end (or the file's)
    c->remaining = c->entries.size();
  }

  // ---- the caller's thread: PerfSampleStream's release rule, then MakeDecodingSource's markers ----

  // Fills out_events_ / out_losses_ with the next events; false at the end. The chunks the last
  // batch pointed into, all handed out, are given back to the workers first.
  bool Fill() {
    RetireChunks();
    out_events_.clear();
    out_losses_.clear();
    while (out_events_.size() < kOutBatch) {
      if (ready_pos_ < ready_end_) {
        Emit(merged_[ready_pos_++]);
        continue;
      }
      if (!NextRound()) {
        if (!finished_) Finish();
        break;
      }
    }
    return !out_events_.empty();
  }

  // Merges the next round into what is pending and marks what may go: false after the last round.
  bool NextRound() {
    for (;;) {
      if (merged_round_ == 0) {
        if (workers_.empty()) {  // the chunk is cut and parsed here, now that it is needed
          while (merged_chunk_ >= cut_count_.load(std::memory_order_relaxed) &&
                 CutAndParse(0, &inline_buffers_, /*wait=*/false)) {
          }
        }
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] {
          const size_t cut = cut_count_.load(std::memory_order_relaxed);
          return merged_chunk_ < cut ? chunk(merged_chunk_).done : cut_ended_;
        });
        if (merged_chunk_ >= cut_count_.load(std::memory_order_relaxed)) {
          lock.unlock();
          return MergeRest();
        }
        ends_here_ = cut_ended_ && merged_chunk_ + 1 == cut_count_.load(std::memory_order_relaxed);
      }
      Chunk& c = chunk(merged_chunk_);
      if (merged_round_ == 0) {
        parts_.file->ApplyNames(c.names);  // before any of its records is handed out
        chunk_start_max_ns_ = max_ts_ns_;
      }
      if (merged_round_ >= c.rounds.size()) {
        FoldCounts(c);
        merged_round_ = 0;
        {
          std::lock_guard<std::mutex> lock(mu_);
          ++merged_chunk_;
        }
        cv_.notify_all();
        continue;
      }
      const Round& round = c.rounds[merged_round_];
      uint32_t from = merged_round_ == 0 ? 0 : c.rounds[merged_round_ - 1].end;
      ++merged_round_;
      if (round.has_prefix_lost) FixPrefixTimes(&c, from, round.end);
      const bool last = ends_here_ && merged_round_ == c.rounds.size();
      const bool left_out = round.has_left_out || round_parts_left_out_;
      if (round.part && !last) {
        // The round goes on in the next chunk: nothing may go before its end, as the sequential
        // reader reads a round whole. Its max time counts now (a later loss record's stamp). The
        // part stays in its chunk: its entries, not handed out yet, keep the chunk from retiring.
        round_parts_.push_back({c.entries.data() + from, c.entries.data() + round.end});
        max_ts_ns_ = std::max(max_ts_ns_, round.max_ts_ns);
        round_parts_left_out_ = left_out;
        continue;
      }
      round_parts_left_out_ = false;
      // Refill: nothing pending, no release (a round whose samples were all left out is not empty).
      if (ready_end_ == merged_.size() && round_parts_.empty() && from == round.end && !left_out) {
        merged_.clear();
        ready_pos_ = ready_end_ = 0;
        continue;
      }
      // What was not handed out yet (sorted) and this round (sorted): the sequential reader's sort.
      round_parts_.push_back(merged_.span(ready_end_));
      round_parts_.push_back({c.entries.data() + from, c.entries.data() + round.end});
      MergeParts();
      max_ts_ns_ = std::max(max_ts_ns_, round.max_ts_ns);
      MarkReady(last);
      return true;
    }
  }

  // After the last chunk: what was not handed out yet, and the parts of a round the records ended
  // in, all go (the sequential reader's end), when the last chunk cut held no record (a file cut
  // short just past a cut) and its round was not known to be the last one. False when none is left.
  bool MergeRest() {
    if (ready_end_ == merged_.size() && round_parts_.empty()) return false;
    round_parts_.push_back(merged_.span(ready_end_));
    MergeParts();
    MarkReady(true);
    return true;
  }

  // The spans gathered in round_parts_ (the round's parts, what was not handed out yet), each
  // sorted, merged into merged_ (which one of them may point into): the sequential reader's sort.
  void MergeParts() {
    MergeSpans(round_parts_, &spare_, &merge_scratch_, &merge_cuts_);
    std::swap(merged_, spare_);
    round_parts_.clear();
  }

  // The release rule: what is not later than the newest time read before the previous round's end
  // may go (everything after the last round).
  void MarkReady(bool last) {
    ready_pos_ = 0;
    if (last) {
      ready_end_ = merged_.size();
    } else if (have_flush_limit_) {
      const Entry* begin = merged_.data();
      ready_end_ = static_cast<size_t>(std::upper_bound(begin, begin + merged_.size(), flush_limit_ns_,
                                                        [](uint64_t ts, const Entry& e) { return ts < e.ts_ns; }) -
                                       begin);
    } else {
      ready_end_ = 0;
    }
    flush_limit_ns_ = max_ts_ns_;
    have_flush_limit_ = true;
  }

  // A loss record without a trailer time was stamped with the running maximum time, which includes
  // the chunks before its own: now known, the round is stamped and sorted again.
  void FixPrefixTimes(Chunk* c, uint32_t from, uint32_t end) {
    bool changed = false;
    for (uint32_t i = from; i < end; ++i) {
      Entry& e = c->entries[i];
      if (!(e.ref & kLostBit) || e.ref == kSkipped) continue;
      const LostRecord& l = c->lost[e.ref & ~kLostBit];
      if (!l.prefix_ts) continue;
      uint64_t ts = std::max(chunk_start_max_ns_, l.local_max_ns);
      if (ts != e.ts_ns) {
        e.ts_ns = ts;
        changed = true;
      }
    }
    if (changed) SortAscendingRuns(c->entries.data() + from, c->entries.data() + end, ByTime, &sort_scratch_);
  }

  void Emit(const Entry& e) {
    Chunk& c = chunk(e.chunk);
    --c.remaining;
    if (e.ref != kSkipped && (e.ref & kLostBit)) {
      const LostRecord& l = c.lost[e.ref & ~kLostBit];
      // Without sample_id_all the CPU is unknown: report it on CPU 0 rather than not at all.
      stream_lost_.cpu = std::max(l.cpu, 0);
      stream_lost_.ts_ns = e.ts_ns;
      stream_lost_.count += l.count;
      return;
    }
    if (e.ts_ns < last_emitted_ns_) ++out_of_order_;
    last_emitted_ns_ = std::max(last_emitted_ns_, e.ts_ns);
    if (stream_lost_.cpu >= 0) {  // the stream hands its marker with this sample
      CombineLost(&acc_lost_, stream_lost_);
      stream_lost_ = LostEvents{};
    }
    if (e.ref == kSkipped) {
      ++skipped_;
      return;
    }
    if (acc_lost_.cpu >= 0) {
      out_losses_.push_back({static_cast<uint32_t>(out_events_.size()), acc_lost_});
      acc_lost_.cpu = -1;
    }
    out_events_.push_back(&c.events[e.ref]);
  }

  void FoldCounts(const Chunk& c) {
    bad_samples_ += c.bad_samples;
    size_mismatches_ += c.size_mismatches;
    without_raw_ += c.without_raw;
    skipped_ += c.left_out;
    anomalies_.Add(c.anomalies);
    first_ts_ns_ = std::min(first_ts_ns_, c.first_ts_ns);
    last_ts_ns_ = std::max(last_ts_ns_, c.last_ts_ns);
  }

  // Chunks merged whose entries were all handed out give their buffers back to the workers: only
  // once no batch handed out points into them.
  void RetireChunks() {
    std::lock_guard<std::mutex> lock(mu_);
    while (retired_ < merged_chunk_ && chunk(retired_).remaining == 0) {
      Chunk& c = chunk(retired_++);
      if (free_count_ < kFreeBuffers) {
        free_[c.worker].push_back(std::move(c.store));
        ++free_count_;
      }
      c.store = HugePages();
      c.events.Reset(nullptr, 0);
      c.entries.Reset(nullptr, 0);
      c.rounds = {};
      c.lost = {};
      c.names = {};
    }
  }

  void Finish() {
    finished_ = true;
    parts_.file->FinishChunkScan(scan_);  // every chunk is cut: counts, losses, where the records end
    Diagnostics& d = *parts_.diagnostics;
    if (size_mismatches_) d.Bump(DiagId::kPerfdataSampleSizeMismatch, size_mismatches_);
    if (bad_samples_) d.Bump(DiagId::kPerfdataBadSample, bad_samples_);
    if (without_raw_) d.Bump(DiagId::kPerfdataSampleWithoutRaw, without_raw_);
    if (out_of_order_) d.Bump(DiagId::kPerfdataOutOfOrder, out_of_order_);
    anomalies_.Report(&d);
    if (skipped_) d.Bump(DiagId::kDecodeSkippedEvents, skipped_);
    if (first_ts_ns_ <= last_ts_ns_) {
      parts_.file->mutable_meta().first_ts_ns = first_ts_ns_;
      parts_.file->mutable_meta().last_ts_ns = last_ts_ns_;
    }
  }

  PerfDataParts parts_;
  std::unique_ptr<KvmDecoder> decoder_;
  std::vector<uint8_t> left_out_ids_;  // KvmDecoder::UndecodedIds
  Chunk& chunk(size_t i) const { return blocks_[i / kChunkBlock][i % kChunkBlock]; }
  std::vector<std::unique_ptr<Chunk[]>> blocks_;  // sized at open; a block allocated as it is reached
  uint64_t chunk_bytes_ = 0;
  size_t most_events_ = 0;                      // events (and entries) a chunk's store has room for
  size_t entries_bytes_ = 0, store_bytes_ = 0;  // where its events start; its size

  // Shared with the workers, under mu_.
  std::mutex mu_;
  std::condition_variable cv_;
  PerfDataFile::ChunkScan scan_;      // written by the worker cutting
  bool cutting_ = false;              // a worker is cutting the next chunk
  bool cut_ended_ = false;            // the records ended in the last chunk cut
  std::atomic<size_t> cut_count_{0};  // chunks cut (their begin, end and names set)
  size_t max_ahead_ = 0;
  bool stop_ = false;
  std::vector<std::vector<HugePages>> free_;  // chunk stores, by the worker that last used them
  size_t free_count_ = 0;
  std::vector<std::thread> workers_;  // none: the caller's thread cuts and parses (inline_buffers_)
  WorkerBuffers inline_buffers_;
  size_t merged_chunk_ = 0;  // chunk being merged (written by the caller's thread under mu_ reads)

  // The caller's thread only.
  size_t merged_round_ = 0, retired_ = 0;
  bool ends_here_ = false;                   // the chunk being merged is the last
  EntryRun merged_, spare_, merge_scratch_;  // merged_: what the last merge gave, spare_ the next one's
  std::vector<Entry> sort_scratch_;
  std::vector<size_t> merge_cuts_;
  std::vector<Span> round_parts_;      // the round's parts so far, each sorted (Round::part), in their chunks
  bool round_parts_left_out_ = false;  // one of them had samples left out
  size_t ready_pos_ = 0, ready_end_ = 0;
  uint64_t max_ts_ns_ = 0, chunk_start_max_ns_ = 0, flush_limit_ns_ = 0, last_emitted_ns_ = 0;
  bool have_flush_limit_ = false;
  LostEvents stream_lost_;                   // PerfSampleStream's pending_lost_
  LostEvents acc_lost_{-1, 0, 0};            // MakeDecodingSource's marker over skipped records
  std::vector<const KvmEvent*> out_events_;  // into the chunks' events
  std::vector<LossAt> out_losses_;
  size_t out_pos_ = 0, out_loss_pos_ = 0;
  uint64_t bad_samples_ = 0, size_mismatches_ = 0, without_raw_ = 0, out_of_order_ = 0, skipped_ = 0;
  DecodeAnomalies anomalies_;
  uint64_t first_ts_ns_ = UINT64_MAX, last_ts_ns_ = 0;
  bool finished_ = false;
};

}  // namespace

Result<std::unique_ptr<KvmEventSource>> OpenPerfDataParallel(std::unique_ptr<MappedFile> input, unsigned threads,
                                                             uint64_t chunk_bytes, const ClockOptions& clock) {
  auto source = std::make_unique<ParallelPerfDataSource>();
  bool parallel = false;
  if (Status s =
          source->Open(std::move(input), threads, chunk_bytes ? chunk_bytes : kDefaultPerfChunkBytes, clock, &parallel);
      !s.ok()) {
    return s.error();
  }
  if (parallel) return std::unique_ptr<KvmEventSource>(std::move(source));
  return source->Sequential();
}

size_t PerfChunkCount(const KvmEventSource& source) {
  auto* p = dynamic_cast<const ParallelPerfDataSource*>(&source);
  return p ? p->chunk_count() : 0;
}

}  // namespace exitscope
