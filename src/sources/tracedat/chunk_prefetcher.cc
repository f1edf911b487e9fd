#include "sources/tracedat/chunk_prefetcher.h"

#include "base/byte_reader.h"

namespace exitscope {

ChunkPrefetcher::~ChunkPrefetcher() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

int ChunkPrefetcher::AddStream(std::span<const uint8_t> region, int64_t chunks) {
  Stream s;
  s.region = region;
  ByteReader r(region);
  s.chunks_left = r.U32();
  if (!r.ok()) {
    s.chunks_left = 0;
    s.truncated = true;
  } else if (chunks >= 0)
    s.chunks_left = static_cast<uint32_t>(chunks);
  s.done = s.chunks_left == 0;
  streams_.push_back(std::move(s));
  return static_cast<int>(streams_.size() - 1);
}

bool ChunkPrefetcher::Produce(Stream& s, Chunk* out) {
  if (s.chunks_left == 0) return false;
  --s.chunks_left;
  ByteReader r(s.region);
  r.Seek(s.pos);
  uint32_t csize = r.U32();
  uint32_t usize = r.U32();
  auto data = r.Bytes(csize);
  if (!r.ok()) {
    s.truncated = true;
    s.chunks_left = 0;
    return false;
  }
  s.pos = r.pos();
  out->file_bytes = csize + kCompressedBlockHeaderSize;
  out->corrupt = !PlausibleUncompressedSize(csize, usize);
  if (!out->corrupt) {
    out->bytes.resize(usize);
    out->corrupt = !decompressor_.Decompress(data, out->bytes);
  }
  if (out->corrupt) out->bytes.clear();
  return true;
}

void ChunkPrefetcher::Start() {
  if (started_ || streams_.empty()) return;
  started_ = true;
  ahead_bytes_ = kAheadBytes / streams_.size();
  worker_ = std::thread([this] { Work(); });
}

void ChunkPrefetcher::Work() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    // The stream with the fewest chunks waiting: the one the merger will starve on first.
    Stream* pick = nullptr;
    for (Stream& s : streams_) {
      if (s.chunks_left && !s.full && (!pick || s.ready.size() < pick->ready.size())) pick = &s;
    }
    if (stop_) return;
    if (!pick) {
      worker_waiting_ = true;
      cv_.wait(lock);
      worker_waiting_ = false;
      continue;
    }
    Chunk chunk;
    if (!free_.empty()) {
      chunk.bytes = std::move(free_.back());
      free_.pop_back();
    }
    lock.unlock();
    // Only this thread touches a stream's cursor once started; the consumer reads `ready` only.
    bool more = Produce(*pick, &chunk);
    lock.lock();
    if (more) {
      pick->ready_bytes += chunk.bytes.size();
      pick->ready.push_back(std::move(chunk));
      if (pick->ready.size() >= kMinDepth && pick->ready_bytes >= ahead_bytes_) pick->full = true;
    }
    if (!more || pick->chunks_left == 0) pick->done = true;
    if (consumer_waiting_) cv_.notify_all();
  }
}

bool ChunkPrefetcher::Next(int stream, Chunk* out, bool* truncated) {
  Stream& s = streams_[stream];
  if (!started_) {
    bool more = Produce(s, out);
    *truncated = s.truncated;
    return more;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (!out->bytes.empty() || out->bytes.capacity()) free_.push_back(std::move(out->bytes));
  while (s.ready.empty() && !s.done) {
    if (worker_waiting_) cv_.notify_all();
    consumer_waiting_ = true;
    cv_.wait(lock);
    consumer_waiting_ = false;
  }
  *truncated = s.truncated;
  if (s.ready.empty()) return false;
  *out = std::move(s.ready.front());
  s.ready.pop_front();
  s.ready_bytes -= out->bytes.size();
  if (s.full && (s.ready.size() < kMinDepth / 2 || s.ready_bytes < ahead_bytes_ / 2)) {
    s.full = false;
    if (worker_waiting_) cv_.notify_all();
  }
  return true;
}

}  // namespace exitscope
