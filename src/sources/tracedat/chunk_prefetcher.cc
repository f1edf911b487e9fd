#include "sources/tracedat/chunk_prefetcher.h"

#include <algorithm>
#include <array>

#include "base/byte_reader.h"

namespace exitscope {

ChunkPrefetcher::~ChunkPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

namespace {

// Walks up to `max` chunk headers from `pos` while each whole chunk ends at or below `limit`;
// *chunks says how many did. Returns where the last of them ends.
uint64_t WalkChunks(std::span<const uint8_t> region, uint64_t pos, uint32_t max, uint64_t limit, uint32_t* chunks) {
  *chunks = 0;
  while (*chunks < max && pos <= limit && limit - pos >= kCompressedBlockHeaderSize) {
    ByteReader h(region);
    h.Seek(pos);
    const uint64_t csize = h.U32();
    if (!h.ok() || csize > limit - pos - kCompressedBlockHeaderSize) break;
    pos += kCompressedBlockHeaderSize + csize;
    ++*chunks;
  }
  return pos;
}

}  // namespace

int ChunkPrefetcher::AddStream(std::span<const uint8_t> tail, uint64_t size) {
  Stream s;
  s.region = tail;
  s.size = size;
  // trace-cmd 3.1 records the compressed size without the leading 4-byte chunk count.
  s.end = std::min<uint64_t>(size + kChunkCountSize, tail.size());
  if (file_) s.file_offset = static_cast<uint64_t>(tail.data() - file_->bytes().data());
  // The count with pread too: read through the mapping, each stream's count faulted in the 64 KB
  // around it (the kernel's fault-around), 17 MB of the file resident on 256 CPUs.
  std::array<uint8_t, kChunkCountSize> count{};
  std::span<const uint8_t> head = tail.first(std::min<size_t>(tail.size(), kChunkCountSize));
  if (Preads() && head.size() == kChunkCountSize) {
    file_->ReadAt(s.file_offset, kChunkCountSize, count.data());
    head = count;
  }
  ByteReader r(head);
  s.chunks_left = r.U32();
  if (!r.ok()) {
    s.chunks_left = 0;
    s.how.truncated = true;
  }
  s.done = !Pending(s);
  streams_.push_back(std::move(s));
  return static_cast<int>(streams_.size() - 1);
}

void ChunkPrefetcher::CrossSize(Stream& s) {
  s.crossed = true;
  uint32_t n = 0;
  const uint64_t count_end = WalkChunks(s.region, s.pos, s.chunks_left, s.region.size(), &n);
  if (n < s.chunks_left) return;  // the file was cut: the size may be right, read as far as it goes
  s.end = count_end;
  s.how.size_mismatch = true;
}

void ChunkPrefetcher::CheckEnd(Stream& s) {
  s.end_checked = true;
  if (s.how.truncated || s.how.size_mismatch) return;
  auto fits_size = [&](uint64_t end) {
    const uint64_t bytes = end - kChunkCountSize;
    return bytes == s.size || bytes + kChunkCountSize == s.size;
  };
  if (fits_size(s.pos)) return;  // the claims agree
  uint32_t more = 0;
  const uint64_t size_end = WalkChunks(s.region, s.pos, UINT32_MAX, s.end, &more);
  if (more == 0 || !fits_size(size_end)) return;
  s.chunks_left = more;
  s.how.count_mismatch = true;
}

std::span<const uint8_t> ChunkPrefetcher::View(Stream& s, uint64_t pos, uint64_t n) const {
  if (!Preads()) return s.region.subspan(pos, n);
  if (pos < s.read_pos || pos + n > s.read_pos + s.read.size()) {
    const uint64_t len = std::min<uint64_t>(std::max<uint64_t>(n, ReadBytes()), s.end - pos);
    s.read.resize(len);
    file_->ReadAt(s.file_offset + pos, len, s.read.data());
    s.read_pos = pos;
  }
  return std::span<const uint8_t>(s.read).subspan(pos - s.read_pos, n);
}

// Reads the header and bytes of the chunk at s.pos below s.end; false when it is not all there.
bool ChunkPrefetcher::ReadChunk(Stream& s, uint32_t* usize, std::span<const uint8_t>* data) const {
  if (s.pos > s.end || s.end - s.pos < kCompressedBlockHeaderSize) return false;
  ByteReader h(View(s, s.pos, kCompressedBlockHeaderSize));
  const uint32_t csize = h.U32();
  *usize = h.U32();
  if (csize > s.end - s.pos - kCompressedBlockHeaderSize) return false;
  *data = View(s, s.pos + kCompressedBlockHeaderSize, csize);
  return true;
}

bool ChunkPrefetcher::Produce(Stream& s, Chunk* out, Decompressor& decompressor) {
  std::span<const uint8_t> data;
  uint32_t usize = 0;
  const bool more = Take(s, out, &data, &usize);
  if (more) Fill(data, usize, decompressor, out);
  // The stream ended (its last chunk, a cut table or the end check): its read buffer goes.
  if (!Pending(s)) std::vector<uint8_t>().swap(s.read);
  return more;
}

bool ChunkPrefetcher::Take(Stream& s, Chunk* out, std::span<const uint8_t>* data, uint32_t* usize) {
  if (s.chunks_left == 0 && !s.end_checked) CheckEnd(s);
  if (s.chunks_left == 0) return false;
  bool whole = ReadChunk(s, usize, data);
  if (!whole && !s.crossed) {
    CrossSize(s);
    whole = ReadChunk(s, usize, data);
  }
  --s.chunks_left;
  if (!whole) {
    s.how.truncated = true;
    s.chunks_left = 0;
    return false;
  }
  s.pos += kCompressedBlockHeaderSize + data->size();
  out->file_bytes = data->size() + kCompressedBlockHeaderSize;
  return true;
}

void ChunkPrefetcher::Fill(std::span<const uint8_t> data, uint32_t usize, Decompressor& decompressor, Chunk* out) {
  out->corrupt = !PlausibleUncompressedSize(data.size(), usize);
  if (!out->corrupt) {
    out->bytes.resize(usize);
    out->corrupt = !decompressor.Decompress(data, out->bytes);
  }
  if (out->corrupt) out->bytes.clear();
}

void ChunkPrefetcher::ProduceShared(Stream& s, std::unique_lock<std::mutex>& lock, Decompressor& decompressor,
                                    std::vector<uint8_t>* compressed) {
  s.busy = true;
  Chunk chunk;
  // The buffer freed longest ago, once kReuseAfterBytes are free: not one the consumer just read.
  if (!free_.empty() && free_bytes_ >= kReuseAfterBytes) {
    chunk.bytes = std::move(free_.front());
    free_.pop_front();
    free_bytes_ -= chunk.bytes.capacity();
  }
  lock.unlock();
  // Only the thread that marked the stream busy touches its cursor and read buffer; the consumer
  // reads `ready` only, under the lock.
  std::span<const uint8_t> data;
  uint32_t usize = 0;
  const bool more = Take(s, &chunk, &data, &usize);
  if (more && Preads()) {  // in the read buffer: the next take may refill it
    compressed->assign(data.begin(), data.end());
    data = *compressed;
  }
  if (!Pending(s)) std::vector<uint8_t>().swap(s.read);
  lock.lock();
  s.busy = false;
  if (!more || !Pending(s)) s.done = true;  // nothing left to take
  if (more) {
    // Reserved before the stream is given up, so the slots stay in the order the chunks were taken.
    // A deque keeps its elements where they are as others are added or handed out.
    Slot* slot = &s.ready.emplace_back();
    slot->chunk = std::move(chunk);
    // The chunk after it may be taken now, by a sleeping worker. Not by the consumer, if it slept
    // while this thread took: waking it for each take cost as many sleeps as chunks (a take is a
    // copy of a few KB; the consumer finds a stream busy seldom).
    if (workers_waiting_) cv_.notify_all();
    lock.unlock();
    Fill(data, usize, decompressor, &slot->chunk);
    lock.lock();
    slot->filled = true;
    s.ready_bytes += slot->chunk.bytes.size();
    ready_bytes_ += slot->chunk.bytes.size();
    peak_ready_bytes_ = std::max(peak_ready_bytes_, ready_bytes_);
    if (s.ready.size() >= Depth(s) && s.ready_bytes >= ahead_bytes_) s.full = true;
  }
  // One wake-up per chunk cost ~5 % of a zstd report in futex calls: the consumer, faster than
  // one decompressing thread, slept on every chunk. It now wakes to a few chunks at a time (once the
  // one it waits for is there).
  if (waiting_stream_ >= 0 && &streams_[static_cast<size_t>(waiting_stream_)] == &s &&
      (s.ready.empty() || s.ready.front().filled) && (s.done || s.full || s.ready.size() >= kWakeDepth)) {
    cv_.notify_all();
  }
}

size_t ChunkPrefetcher::ReadBufferBytes() const {
  size_t bytes = 0;
  for (const Stream& s : streams_) bytes += s.read.capacity();
  return bytes;
}

void ChunkPrefetcher::Start(unsigned threads) {
  if (started_ || streams_.empty()) return;
  started_ = true;
  ahead_bytes_ = kAheadBytes / streams_.size();
  min_depth_ = std::clamp<size_t>(kAheadBytes / (streams_.size() * kTypicalChunkBytes), 1, kMinDepth);
  threads = std::clamp<unsigned>(threads, 1, static_cast<unsigned>(streams_.size()));
  for (unsigned i = 0; i < threads; ++i) workers_.emplace_back([this] { Work(); });
}

void ChunkPrefetcher::Work() {
  Decompressor decompressor(decompressor_.codec());
  std::vector<uint8_t> compressed;  // a taken chunk's bytes, copied out of the stream's read buffer
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    // The stream with the fewest chunks waiting: the one the merger will starve on first.
    Stream* pick = nullptr;
    for (Stream& s : streams_) {
      if (Takeable(s) && (!pick || s.ready.size() < pick->ready.size())) pick = &s;
    }
    // The stream the consumer sleeps on first: it is woken once kWakeDepth chunks wait there (or
    // the stream is full short of them).
    if (waiting_stream_ >= 0) {
      Stream& w = streams_[static_cast<size_t>(waiting_stream_)];
      if (Takeable(w)) pick = &w;
    }
    if (stop_) return;
    if (!pick) {
      ++workers_waiting_;
      cv_.wait(lock);
      --workers_waiting_;
      continue;
    }
    ProduceShared(*pick, lock, decompressor, &compressed);
  }
}

bool ChunkPrefetcher::Next(int stream, Chunk* out, StreamEnd* end) {
  Stream& s = streams_[stream];
  if (!started_) {
    bool more = Produce(s, out, decompressor_);
    *end = s.how;
    return more;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (out->bytes.capacity()) {
    free_bytes_ += out->bytes.capacity();
    free_.push_back(std::move(out->bytes));
  }
  while (s.ready.empty() ? !s.done : !s.ready.front().filled) {
    // The chunk it needs is not decompressed yet: rather than sleep, the consumer takes the one after
    // it (or it, when no thread took it yet) and decompresses that itself. With one CPU's data, one
    // thread decompressed all of it while the consumer slept in turns; now both do, in order.
    if (Takeable(s)) {
      ++consumer_took_;
      ProduceShared(s, lock, decompressor_, &compressed_);
      continue;
    }
    // Twice in a row on one stream: the merger reads it on its own (a busy CPU among idle ones).
    if (stream == last_waited_) hot_stream_ = stream;
    last_waited_ = stream;
    ++consumer_waits_;
    if (workers_waiting_) cv_.notify_all();
    waiting_stream_ = stream;
    cv_.wait(lock);
    waiting_stream_ = -1;
  }
  if (s.ready.empty()) {
    *end = s.how;  // every chunk taken: no thread writes it any more
    return false;
  }
  *out = std::move(s.ready.front().chunk);
  s.ready.pop_front();
  s.ready_bytes -= out->bytes.size();
  ready_bytes_ -= out->bytes.size();
  if (s.full && (s.ready.size() < (Depth(s) + 1) / 2 || s.ready_bytes < ahead_bytes_ / 2)) {
    s.full = false;
    if (workers_waiting_) cv_.notify_all();
  }
  return true;
}

}  // namespace exitscope
