// Decompresses trace.dat v7 data chunks ahead of the page walker, on a second thread, so zstd (about
// 40% of a report's CPU time) overlaps walking, decoding and pairing. In: each CPU's chunk table
// ({u32 count} then {u32 compressed size, u32 size, bytes} per chunk). Out: per CPU, the decompressed
// chunks in file order. Memory stays flat: at most kAheadBytes in all (but kMinDepth chunks per CPU
// at least) wait decompressed.
// Small inputs (and Start() never called) decompress inline on the caller's thread, same results.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "sources/tracedat/decompressor.h"
#include "sources/tracedat/tracedat_format.h"

namespace exitscope {

class ChunkPrefetcher {
 public:
  struct Chunk {
    std::vector<uint8_t> bytes;  // the decompressed pages (empty when corrupt)
    bool corrupt = false;        // did not decompress, or an implausible size
    uint64_t file_bytes = 0;     // bytes of the file this chunk took (progress)
  };

  explicit ChunkPrefetcher(Codec codec) : decompressor_(codec) {}
  ~ChunkPrefetcher();
  ChunkPrefetcher(const ChunkPrefetcher&) = delete;
  ChunkPrefetcher& operator=(const ChunkPrefetcher&) = delete;

  // Registers one CPU's chunk table; returns its stream index. Call before Start(). `chunks` >= 0
  // overrides the count at the table's start (the header found it damaged).
  int AddStream(std::span<const uint8_t> region, int64_t chunks = -1);
  // Starts the worker thread.
  void Start();
  // The next chunk of `stream` (the previous one's buffer is recycled); false when the table is done.
  // *truncated is set when the table ended before its count said (the file was cut).
  bool Next(int stream, Chunk* out, bool* truncated);

 private:
  // The worker fills each stream up to its share of kAheadBytes of decompressed chunks, then sleeps
  // until the consumer drained half: with 40 KB chunks one wake-up per chunk cost ~3,400 context
  // switches on a 10 M-event trace. At least kMinDepth chunks, whatever their size.
  static constexpr size_t kAheadBytes = 8 << 20;
  static constexpr size_t kMinDepth = 4;
  struct Stream {
    std::span<const uint8_t> region;
    size_t pos = kChunkCountSize;
    uint32_t chunks_left = 0;
    bool truncated = false;
    bool done = false;        // set under the lock once the worker produced the last chunk
    std::deque<Chunk> ready;  // worker → consumer, in file order
    size_t ready_bytes = 0;   // decompressed bytes in `ready`
    bool full = false;        // filled to kAheadBytes; not refilled until drained to half
  };
  // Reads and decompresses the stream's next chunk into *out; false when the table is done.
  bool Produce(Stream& s, Chunk* out);
  void Work();

  Decompressor decompressor_;  // used by one thread only: the worker, or the caller when inline
  std::vector<Stream> streams_;
  std::vector<std::vector<uint8_t>> free_;  // recycled chunk buffers
  std::mutex mu_;
  std::condition_variable cv_;
  std::thread worker_;
  bool started_ = false, stop_ = false;
  size_t ahead_bytes_ = kAheadBytes;                        // per stream, set by Start()
  bool worker_waiting_ = false, consumer_waiting_ = false;  // notify only a thread that sleeps
};

}  // namespace exitscope
