// Decompresses trace.dat v7 data chunks ahead of the page walker, on worker threads, so zstd (about
// 40% of a report's CPU time) overlaps walking, decoding and pairing. A CPU's chunks are taken in
// file order, one thread at a time, each into a slot reserved in that order, and decompressed by
// whichever thread took it while others take the next; the consumer, rather than sleep on a chunk
// not decompressed yet, takes and decompresses the next one itself. In: each CPU's chunk table
// ({u32 count} then {u32 compressed size, u32 size, bytes} per chunk). Out: per CPU, the decompressed
// chunks in file order. Memory stays flat: at most kAheadBytes in all (but min_depth_ chunks per CPU
// at least, one on a host with hundreds of CPUs) wait decompressed, and kReuseAfterBytes of freed
// buffers wait to be reused.
// Small inputs (and Start() never called) decompress inline on the caller's thread, same results.
//
// Two claims say where a CPU's chunks end: the count in front of them and the CPU's size in the
// BUFFER option (without the count, as trace-cmd 3.1.6 writes it; with it, as 3.2.0 does). Each
// chunk header gives its own size, so walking them says which claim the file bears out. The walk is
// the decompressor's own: only where the claims part (a chunk would cross the size; the count's
// chunks end short of it) does it look ahead over the headers, then reads what the file bears out:
// - all the count's chunks are in the file and run past the size: the size is wrong (0 in the worst
//   case); the count's chunks are read (StreamEnd::size_mismatch);
// - more whole chunks follow the count's within the size, ending where it says: the count is wrong
//   (0 in the worst case); they are read too (StreamEnd::count_mismatch).
// A walk at open would touch every page of the data before the first chunk is decompressed: ~5 % of
// a report's time, on one core, and a larger resident set.
// Given the MappedFile the tails lie in, chunks are read with pread (ReadBytes() at a time per
// stream), not through the mapping: no page of the compressed data is mapped in, so none counts as
// resident (only the rare look-ahead over headers where the claims part reads the mapping). The
// read buffers share kReadBudget, so they stay flat on a host with hundreds of CPUs, and a stream's
// is freed once it ended.
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "sources/mapped_file.h"
#include "sources/tracedat/decompressor.h"
#include "sources/tracedat/tracedat_format.h"

namespace exitscope {

// One of `parts` shares of `budget`, within [lo, hi]: a buffer per CPU that keeps the sum flat on a
// host with hundreds of CPUs (lo bounds it there) and its size on a few (hi).
inline uint64_t BudgetShare(uint64_t budget, size_t parts, uint64_t lo, uint64_t hi) {
  return std::clamp<uint64_t>(budget / std::max<size_t>(parts, 1), lo, hi);
}

class ChunkPrefetcher {
 public:
  struct Chunk {
    std::vector<uint8_t> bytes;  // the decompressed pages (empty when corrupt)
    bool corrupt = false;        // did not decompress, or an implausible size
    uint64_t file_bytes = 0;     // bytes of the file this chunk took (progress)
  };

  // What a stream's table turned out to be, final once Next() returned false.
  struct StreamEnd {
    bool truncated = false;       // the table ended before its count said (the file was cut)
    bool size_mismatch = false;   // the count's chunks run past the CPU's size: read by the count
    bool count_mismatch = false;  // whole chunks follow the count's, up to the size: read as well
  };

  // `file`: the file the tails lie in, read with pread (nullptr: read in place, as a view).
  explicit ChunkPrefetcher(Codec codec, const MappedFile* file = nullptr) : decompressor_(codec), file_(file) {}
  ~ChunkPrefetcher();
  ChunkPrefetcher(const ChunkPrefetcher&) = delete;
  ChunkPrefetcher& operator=(const ChunkPrefetcher&) = delete;

  // Registers one CPU's chunk table, `tail` the file from its count to the file's end and `size` the
  // CPU's size in the BUFFER option; returns its stream index. Call before Start(). With a file,
  // `tail` is a span of its bytes().
  int AddStream(std::span<const uint8_t> tail, uint64_t size);
  // Starts the worker threads, one per stream at most (the consumer decompresses too, when it would wait).
  void Start(unsigned threads = 1);
  // The next chunk of `stream` (the previous one's buffer is recycled); false when the table is done,
  // and then *end says how it ended.
  bool Next(int stream, Chunk* out, StreamEnd* end);
  // The read buffers' capacity, every stream's: call it inline, or once every stream ended.
  size_t ReadBufferBytes() const;
  // What the read buffers take in all, however many streams (but kMinReadBytes each at least).
  static constexpr size_t kReadBudget = 2 << 20;
  // The most decompressed bytes that waited for the consumer at once, every stream's.
  size_t PeakReadyBytes() {
    std::lock_guard<std::mutex> lock(mu_);
    return peak_ready_bytes_;
  }
  static constexpr size_t kAheadBytes = 4 << 20;
  // How often the consumer slept in Next() waiting for a chunk.
  uint64_t ConsumerWaits() {
    std::lock_guard<std::mutex> lock(mu_);
    return consumer_waits_;
  }
  // How many chunks the consumer took and decompressed itself rather than sleep in Next().
  uint64_t ConsumerTook() {
    std::lock_guard<std::mutex> lock(mu_);
    return consumer_took_;
  }

 private:
  // The workers fill each stream up to its share of kAheadBytes of decompressed chunks, then sleep
  // until the consumer drained half: with 40 KB chunks one wake-up per chunk cost ~3,400 context
  // switches on a 10 M-event trace. At least kMinDepth chunks, whatever their size, while that many
  // of trace-cmd's 40 KB chunks per stream fit kAheadBytes (up to 25 streams); fewer past that, one
  // at least (4 each were 40 MB on 256 CPUs). 4 MB (and 2 MB for kReuseAfterBytes) ran as fast as
  // 8 MB (4 MB) in paired runs on a 10 M-event trace, and a 1 M-event one now fills them as a 30 M
  // one does: the same peak resident set at every size.
  static constexpr size_t kMinDepth = 4;
  static constexpr size_t kTypicalChunkBytes = 40 << 10;
  static constexpr size_t kWakeDepth = 4;  // chunks that wake a consumer sleeping on their stream
  // A chunk's place in its stream's order, reserved when it is taken: it is handed out once it and
  // every chunk before it are decompressed, whichever thread did each.
  struct Slot {
    Chunk chunk;
    bool filled = false;  // decompressed (set under the lock)
  };
  struct Stream {
    std::span<const uint8_t> region;  // from the count to the file's end
    uint64_t size = 0;                // the BUFFER option's claim
    uint64_t end = 0;                 // chunks are read below this offset in `region`
    size_t pos = kChunkCountSize;
    uint32_t chunks_left = 0;
    bool crossed = false;      // looked past `end` once (the size claim)
    bool end_checked = false;  // the count's last chunk was checked against the size
    StreamEnd how;
    bool done = false;          // set under the lock once the last chunk was taken
    std::deque<Slot> ready;     // taken chunks → consumer, in file order (some still decompressing)
    size_t ready_bytes = 0;     // decompressed bytes in `ready`
    bool full = false;          // filled to kAheadBytes; not refilled until drained to half
    bool busy = false;          // a thread is taking its next chunk: the cursor is that thread's
    uint64_t file_offset = 0;   // of `region` in the file (pread)
    std::vector<uint8_t> read;  // region bytes [read_pos, read_pos + read.size()), read with pread
    uint64_t read_pos = 0;
  };
  // Bytes a stream reads at a time: a dozen of trace-cmd's chunks (10 pages each, ~5 KB compressed),
  // less once kReadBudget is shared by more than 32 streams (a 64 KB buffer each was 16 MB on a
  // 256-CPU host), but kMinReadBytes at least (a chunk or two). A larger chunk is read whole.
  static constexpr size_t kReadBytes = 64 << 10;
  static constexpr size_t kMinReadBytes = 8 << 10;
  size_t ReadBytes() const { return BudgetShare(kReadBudget, streams_.size(), kMinReadBytes, kReadBytes); }
  // Whether the streams' bytes are read with pread (a mapped file), not used in place.
  bool Preads() const { return file_ && file_->mapped(); }
  // Region bytes [pos, pos + n) of the stream, below s.end: from its read buffer (refilled with pread
  // when they are not all in it), or in place without a file. Valid until the next call.
  std::span<const uint8_t> View(Stream& s, uint64_t pos, uint64_t n) const;
  // Reads and decompresses the stream's next chunk into *out; false when the table is done. Frees the
  // stream's read buffer once it ended. Inline only (Start() not called).
  bool Produce(Stream& s, Chunk* out, Decompressor& decompressor);
  // Takes the stream's next chunk: its header read, the cursor moved past it, *data its compressed
  // bytes (in the stream's read buffer, valid until the next take), *usize the size it claims;
  // out->file_bytes set. False when the table is done.
  bool Take(Stream& s, Chunk* out, std::span<const uint8_t>* data, uint32_t* usize);
  // Decompresses a taken chunk into out->bytes (out->corrupt when it does not, or claims an
  // implausible size).
  static void Fill(std::span<const uint8_t> data, uint32_t usize, Decompressor& decompressor, Chunk* out);
  // With `lock` held and `s` not busy, Pending and not full: takes its next chunk (copied into
  // *compressed when it lies in the read buffer the next take refills), reserves the chunk's slot and
  // decompresses it with the lock released, so that another thread may take and decompress the chunk
  // after it meanwhile. Returns with the lock held. Workers, and the consumer instead of sleeping.
  void ProduceShared(Stream& s, std::unique_lock<std::mutex>& lock, Decompressor& decompressor,
                     std::vector<uint8_t>* compressed);
  // Whether the consumer may take `s`'s next chunk itself, or a worker may.
  static bool Takeable(const Stream& s) { return !s.busy && Pending(s) && !s.full; }
  // Whether Produce may still find a chunk in the stream.
  static bool Pending(const Stream& s) { return s.chunks_left || !(s.end_checked || s.how.truncated); }
  // The claims part (see the top): the chunk at s.pos would cross the size, or the count's chunks
  // ended short of it. Each looks ahead over chunk headers once and settles the stream's end.
  static void CrossSize(Stream& s);
  static void CheckEnd(Stream& s);
  bool ReadChunk(Stream& s, uint32_t* usize, std::span<const uint8_t>* data) const;
  void Work();

  Decompressor decompressor_;        // the caller's, inline or when it helps (each worker has its own)
  std::vector<uint8_t> compressed_;  // the caller's copy of a chunk it took (ProduceShared)
  const MappedFile* file_;           // read with pread when set
  std::vector<Stream> streams_;
  // Recycled chunk buffers, oldest first. A worker reuses one only once kReuseAfterBytes are free,
  // and the oldest: writing into a buffer the consumer has just read (its lines still in the other
  // core's caches) made decompression ~2x dearer on this VM when a cache line takes ~400-500 ns
  // between its two vCPUs (bench_floor cores); x27 zstd report, 9 paired runs: 0.53 -> 0.43 s there.
  static constexpr size_t kReuseAfterBytes = 2 << 20;
  std::deque<std::vector<uint8_t>> free_;
  size_t free_bytes_ = 0;  // their capacity
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::thread> workers_;
  bool started_ = false, stop_ = false;
  size_t ahead_bytes_ = kAheadBytes;               // per stream, set by Start()
  size_t min_depth_ = kMinDepth;                   // chunks a stream fills at least, set by Start()
  size_t ready_bytes_ = 0, peak_ready_bytes_ = 0;  // every stream's
  unsigned workers_waiting_ = 0;                   // notify only when a thread sleeps
  int waiting_stream_ = -1;                        // the stream the consumer sleeps on, -1 when it does not
  // The stream the consumer slept on twice in a row: filled kMinDepth chunks deep however many
  // streams share kAheadBytes. With hundreds of CPUs every stream is one chunk deep, and where load
  // moves from CPU to CPU the busy CPU's stream ran dry at every chunk: the consumer slept on each
  // (67 k futex calls on a 256-CPU trace, 1 k on 2 CPUs). One stream at a time, and not one the
  // consumer sleeps on only now and then (every CPU busy: most would end up 4 deep).
  int hot_stream_ = -1, last_waited_ = -1;
  uint64_t consumer_waits_ = 0;
  uint64_t consumer_took_ = 0;
  size_t Depth(const Stream& s) const { return &s - streams_.data() == hot_stream_ ? kMinDepth : min_depth_; }
};

}  // namespace exitscope
