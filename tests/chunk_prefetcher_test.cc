// ChunkPrefetcher on chunk tables built here (codec "none": a chunk's bytes are its pages), where
// the count and the CPU's size agree, part, or the file is cut: which chunks come out and how the
// stream says it ended, on the worker thread and inline alike, in place and read from a file (pread).
// The same claims on real traces are damaged in tests/tracedat_damage_test.cc.
#include "sources/tracedat/chunk_prefetcher.h"

#include <gtest/gtest.h>
#include <unistd.h>
#include <zstd.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "sources/mapped_file.h"

namespace exitscope {
namespace {

void PutU32(std::vector<uint8_t>* b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

// A chunk table: the count, then each chunk's header and bytes (chunk i is `i + 1` bytes of 'a' + i).
// *chunk_bytes: the table's bytes after the count.
std::vector<uint8_t> Table(uint32_t count, int chunks, uint64_t* chunk_bytes) {
  std::vector<uint8_t> b;
  PutU32(&b, count);
  for (int i = 0; i < chunks; ++i) {
    const uint32_t n = static_cast<uint32_t>(i + 1);
    PutU32(&b, n);
    PutU32(&b, n);
    b.insert(b.end(), n, static_cast<uint8_t>('a' + i));
  }
  *chunk_bytes = b.size() - kChunkCountSize;
  return b;
}

// Tables written one after another to a file (after a few other bytes, so none starts at offset
// 0) and mapped: a prefetcher given the file reads them with pread. Each tail runs to the file's end.
struct TableFile {
  std::unique_ptr<MappedFile> file;
  std::vector<std::span<const uint8_t>> tails;
};

TableFile WriteTables(const std::vector<std::vector<uint8_t>>& tables) {
  static int serial = 0;
  const std::string path =
      ::testing::TempDir() + "/exitscope-prefetch-" + std::to_string(getpid()) + "-" + std::to_string(serial++);
  std::vector<uint8_t> all(3, 0xee);
  std::vector<size_t> at;
  for (const auto& t : tables) {
    at.push_back(all.size());
    all.insert(all.end(), t.begin(), t.end());
  }
  FILE* f = std::fopen(path.c_str(), "wb");
  EXPECT_NE(f, nullptr);
  if (f) {
    EXPECT_EQ(std::fwrite(all.data(), 1, all.size(), f), all.size());
    std::fclose(f);
  }
  TableFile out;
  auto file = MappedFile::Open(path);
  ::unlink(path.c_str());  // the mapping and the descriptor pread reads from stay
  EXPECT_TRUE(file.ok());
  if (!file.ok()) return out;
  out.file = std::move(file.value());
  EXPECT_TRUE(out.file->mapped());
  for (size_t a : at) out.tails.push_back(out.file->bytes().subspan(a));
  return out;
}

struct Read {
  std::string chunks;  // each chunk's bytes, '|' after each
  ChunkPrefetcher::StreamEnd end;
};

struct Mode {
  bool threaded;
  bool pread;  // the table read from a file, not in place
};

Read ReadAll(const std::vector<uint8_t>& table, uint64_t size, Mode mode) {
  TableFile tf;
  std::span<const uint8_t> tail(table);
  if (mode.pread) {
    tf = WriteTables({table});
    if (tf.tails.empty()) return {};
    tail = tf.tails[0];
  }
  ChunkPrefetcher p(Codec::kNone, tf.file.get());
  const int s = p.AddStream(tail, size);
  if (mode.threaded) p.Start();
  Read r;
  ChunkPrefetcher::Chunk c;
  while (p.Next(s, &c, &r.end)) {
    EXPECT_FALSE(c.corrupt);
    r.chunks += std::string(c.bytes.begin(), c.bytes.end()) + "|";
  }
  EXPECT_EQ(p.ReadBufferBytes(), 0u) << "bytes of the stream's read buffer once it ended";
  return r;
}

class ChunkPrefetcherClaims : public ::testing::TestWithParam<Mode> {};

TEST_P(ChunkPrefetcherClaims, AgreeingClaimsReadEveryChunkUnflagged) {
  uint64_t bytes = 0;
  const auto t = Table(3, 3, &bytes);
  // trace-cmd 3.1.6's size leaves the count out, 3.2.0's counts it in.
  for (uint64_t size : {bytes, bytes + kChunkCountSize}) {
    Read r = ReadAll(t, size, GetParam());
    EXPECT_EQ(r.chunks, "a|bb|ccc|");
    EXPECT_FALSE(r.end.truncated || r.end.size_mismatch || r.end.count_mismatch);
  }
}

TEST_P(ChunkPrefetcherClaims, SizeTooSmallGivesWayToACountTheFileHolds) {
  uint64_t bytes = 0;
  auto t = Table(3, 3, &bytes);
  t.push_back(0xee);  // whatever follows the table (the next CPU's count, a section)
  for (uint64_t size : {uint64_t{0}, uint64_t{5}}) {
    Read r = ReadAll(t, size, GetParam());
    EXPECT_EQ(r.chunks, "a|bb|ccc|") << size;
    EXPECT_TRUE(r.end.size_mismatch);
    EXPECT_FALSE(r.end.truncated || r.end.count_mismatch);
  }
}

TEST_P(ChunkPrefetcherClaims, CountTooSmallGivesWayToASizeTheChunksFill) {
  uint64_t bytes = 0;
  const auto t = Table(0, 3, &bytes);
  Read r = ReadAll(t, bytes, GetParam());
  EXPECT_EQ(r.chunks, "a|bb|ccc|");
  EXPECT_TRUE(r.end.count_mismatch);
  EXPECT_FALSE(r.end.truncated || r.end.size_mismatch);
  uint64_t bytes1 = 0;
  const auto t1 = Table(1, 3, &bytes1);
  r = ReadAll(t1, bytes1, GetParam());
  EXPECT_EQ(r.chunks, "a|bb|ccc|");
  EXPECT_TRUE(r.end.count_mismatch);
}

TEST_P(ChunkPrefetcherClaims, ChunksTheSizeDoesNotEndOnAreNotRead) {
  // Two chunks follow the count's one, but the size ends inside the third: neither claim is borne
  // out, so the count stands.
  uint64_t bytes = 0;
  const auto t = Table(1, 3, &bytes);
  Read r = ReadAll(t, bytes - 1, GetParam());
  EXPECT_EQ(r.chunks, "a|");
  EXPECT_FALSE(r.end.truncated || r.end.size_mismatch || r.end.count_mismatch);
}

TEST_P(ChunkPrefetcherClaims, ACutFileIsTruncatedNotAWrongSize) {
  uint64_t bytes = 0;
  auto t = Table(3, 3, &bytes);
  t.resize(t.size() - 1);  // the last chunk's last byte is gone
  Read r = ReadAll(t, bytes, GetParam());
  EXPECT_EQ(r.chunks, "a|bb|");
  EXPECT_TRUE(r.end.truncated);
  EXPECT_FALSE(r.end.size_mismatch || r.end.count_mismatch);
  // With a size of 0 too: the count's chunks are not all in the file, so the size is not overruled.
  r = ReadAll(t, 0, GetParam());
  EXPECT_EQ(r.chunks, "");
  EXPECT_TRUE(r.end.truncated);
  EXPECT_FALSE(r.end.size_mismatch);
}

TEST_P(ChunkPrefetcherClaims, NoCountAtAllIsTruncated) {
  const std::vector<uint8_t> t = {1, 0};
  Read r = ReadAll(t, 8, GetParam());
  EXPECT_EQ(r.chunks, "");
  EXPECT_TRUE(r.end.truncated);
}

INSTANTIATE_TEST_SUITE_P(InlineAndThreaded, ChunkPrefetcherClaims,
                         ::testing::Values(Mode{false, false}, Mode{true, false}, Mode{false, true}, Mode{true, true}),
                         [](const auto& info) {
                           return std::string(info.param.threaded ? "threaded" : "inline") +
                                  (info.param.pread ? "_pread" : "_in_place");
                         });

// Several CPUs' tables decompressed ahead on one to three threads (each CPU on one thread at a
// time): every stream's chunks come out whole and in file order, read in turn as the CPU merger
// does, and each stream ends as it does inline. Read from a file too: the 2000-chunk table (2 MB)
// spans many of a stream's pread buffers, with chunks across their ends, and one chunk is larger
// than a buffer.
TEST(ChunkPrefetcherThreads, EveryStreamInOrderOnSeveralThreads) {
  std::vector<std::vector<uint8_t>> tables;
  std::vector<uint64_t> sizes;
  for (int chunks : {2000, 3, 570, 0, 1200}) {
    uint64_t bytes = 0;
    tables.push_back(Table(static_cast<uint32_t>(chunks), chunks, &bytes));
    sizes.push_back(bytes);
  }
  {  // one chunk of 200 KB
    std::vector<uint8_t>& t = tables.emplace_back();
    PutU32(&t, 1);
    PutU32(&t, 200 << 10);
    PutU32(&t, 200 << 10);
    t.insert(t.end(), 200 << 10, 'z');
    sizes.push_back(t.size() - kChunkCountSize);
  }
  const TableFile tf = WriteTables(tables);
  ASSERT_EQ(tf.tails.size(), tables.size());
  auto read = [&](unsigned threads, bool pread = false) {
    ChunkPrefetcher p(Codec::kNone, pread ? tf.file.get() : nullptr);
    for (size_t i = 0; i < tables.size(); ++i) {
      p.AddStream(pread ? tf.tails[i] : std::span<const uint8_t>(tables[i]), sizes[i]);
    }
    if (threads) p.Start(threads);
    std::vector<std::string> got(tables.size());
    std::vector<bool> done(tables.size());
    for (size_t left = tables.size(); left > 0;) {
      for (size_t i = 0; i < tables.size(); ++i) {
        if (done[i]) continue;
        ChunkPrefetcher::Chunk c;
        ChunkPrefetcher::StreamEnd end;
        if (p.Next(static_cast<int>(i), &c, &end)) {
          EXPECT_FALSE(c.corrupt);
          got[i] += std::string(c.bytes.begin(), c.bytes.end()) + "|";
        } else {
          EXPECT_FALSE(end.truncated || end.size_mismatch || end.count_mismatch) << i;
          done[i] = true;
          --left;
        }
      }
    }
    return got;
  };
  const std::vector<std::string> want = read(0);
  EXPECT_EQ(want[0].size(), 2000u * 2001 / 2 + 2000);  // chunk i: i + 1 bytes and its '|'
  EXPECT_EQ(want.back().size(), (200u << 10) + 1);
  EXPECT_EQ(read(0, /*pread=*/true), want);
  for (int round = 0; round < 5; ++round) {
    for (unsigned threads : {1u, 2u, 3u}) {
      EXPECT_EQ(read(threads), want) << threads << " threads";
      EXPECT_EQ(read(threads, /*pread=*/true), want) << threads << " threads, pread";
    }
  }
}

// `streams` tables of `chunks` chunks of `bytes` each (chunk i: `bytes` of 'a' + i % 26).
std::vector<std::vector<uint8_t>> EvenTables(int streams, int chunks, uint32_t bytes) {
  std::vector<std::vector<uint8_t>> tables(static_cast<size_t>(streams));
  for (auto& t : tables) {
    PutU32(&t, static_cast<uint32_t>(chunks));
    for (int i = 0; i < chunks; ++i) {
      PutU32(&t, bytes);
      PutU32(&t, bytes);
      t.insert(t.end(), bytes, static_cast<uint8_t>('a' + i % 26));
    }
  }
  return tables;
}

// A host with hundreds of CPUs: the streams' read buffers share one budget (64 KB each was 16 MB
// on 256 CPUs), and each stream's goes once it ended, inline and on worker threads alike.
TEST(ChunkPrefetcherThreads, ReadBuffersShareABudgetAndGoWithTheirStream) {
  constexpr int kStreams = 256, kChunks = 40;
  constexpr uint32_t kChunkBytes = 1000;
  const std::vector<std::vector<uint8_t>> tables = EvenTables(kStreams, kChunks, kChunkBytes);
  const TableFile tf = WriteTables(tables);
  ASSERT_EQ(tf.tails.size(), tables.size());
  for (unsigned threads : {0u, 2u}) {
    ChunkPrefetcher p(Codec::kNone, tf.file.get());
    for (size_t i = 0; i < tables.size(); ++i) p.AddStream(tf.tails[i], tables[i].size() - kChunkCountSize);
    if (threads) p.Start(threads);
    std::vector<int> chunks(kStreams);
    ChunkPrefetcher::Chunk c;
    ChunkPrefetcher::StreamEnd end;
    if (!threads) {  // every stream has read: its buffer is live
      for (int i = 0; i < kStreams; ++i) chunks[i] += p.Next(i, &c, &end);
      EXPECT_GT(p.ReadBufferBytes(), 0u);
      EXPECT_LE(p.ReadBufferBytes(), ChunkPrefetcher::kReadBudget)
          << "bytes of read buffers, " << kStreams << " streams";
    }
    for (int i = 0; i < kStreams; ++i) {
      while (p.Next(i, &c, &end)) {
        ++chunks[i];
        EXPECT_EQ(c.bytes, std::vector<uint8_t>(kChunkBytes, static_cast<uint8_t>('a' + (chunks[i] - 1) % 26)));
      }
      EXPECT_FALSE(end.truncated || end.size_mismatch || end.count_mismatch) << i;
    }
    EXPECT_EQ(chunks, std::vector<int>(kStreams, kChunks)) << threads << " threads";
    EXPECT_EQ(p.ReadBufferBytes(), 0u) << "bytes of read buffers once every stream ended, " << threads << " threads";
  }
}

// Many streams of large chunks: fewer chunks wait per stream (one at least), so what waits
// decompressed stays near kAheadBytes (4 chunks each were 16 MB here, 40 MB on 256 CPUs), read one
// stream after another or round the streams as the merger does (a consumer sleeping on a stream that
// is full short of kWakeDepth chunks is woken).
TEST(ChunkPrefetcherThreads, ManyStreamsOfLargeChunksWaitInABoundedAhead) {
  constexpr int kStreams = 64, kChunks = 5;
  constexpr uint32_t kChunkBytes = 64 << 10;
  const std::vector<std::vector<uint8_t>> tables = EvenTables(kStreams, kChunks, kChunkBytes);
  const TableFile tf = WriteTables(tables);
  ASSERT_EQ(tf.tails.size(), tables.size());
  for (bool round_robin : {false, true}) {
    ChunkPrefetcher p(Codec::kNone, tf.file.get());
    for (size_t i = 0; i < tables.size(); ++i) p.AddStream(tf.tails[i], tables[i].size() - kChunkCountSize);
    p.Start(2);
    // The workers fill every stream as far as they may before the consumer starts (a bound, so the
    // test does not depend on the wait: a shorter one only leaves less waiting).
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::vector<int> chunks(kStreams);
    std::vector<ChunkPrefetcher::Chunk> held(kStreams);  // the merger holds each stream's current chunk
    ChunkPrefetcher::StreamEnd end;
    auto next = [&](int i) {
      if (!p.Next(i, &held[i], &end)) return false;
      EXPECT_EQ(held[i].bytes, std::vector<uint8_t>(kChunkBytes, static_cast<uint8_t>('a' + chunks[i] % 26)));
      ++chunks[i];
      return true;
    };
    if (round_robin) {
      for (bool any = true; any;) {
        any = false;
        for (int i = 0; i < kStreams; ++i) any |= next(i);
      }
    } else {
      for (int i = 0; i < kStreams; ++i) {
        while (next(i)) {
        }
      }
    }
    EXPECT_EQ(chunks, std::vector<int>(kStreams, kChunks)) << (round_robin ? "round robin" : "in turn");
    EXPECT_LE(p.PeakReadyBytes(), ChunkPrefetcher::kAheadBytes + size_t{kStreams} * kChunkBytes)
        << "bytes decompressed ahead at once, " << (round_robin ? "round robin" : "in turn");
  }
}

// One CPU's table of `chunks` zstd chunks of `bytes` each (chunk i: `bytes` of 'a' + i % 26).
std::vector<uint8_t> ZstdTable(int chunks, uint32_t bytes) {
  std::vector<uint8_t> t;
  PutU32(&t, static_cast<uint32_t>(chunks));
  std::vector<uint8_t> packed(ZSTD_compressBound(bytes));
  for (int i = 0; i < chunks; ++i) {
    const std::vector<uint8_t> raw(bytes, static_cast<uint8_t>('a' + i % 26));
    const size_t n = ZSTD_compress(packed.data(), packed.size(), raw.data(), raw.size(), 1);
    EXPECT_FALSE(ZSTD_isError(n));
    PutU32(&t, static_cast<uint32_t>(n));
    PutU32(&t, bytes);
    t.insert(t.end(), packed.begin(), packed.begin() + static_cast<std::ptrdiff_t>(n));
  }
  return t;
}

// One CPU's data (a 1-CPU trace, or one CPU that did all the work): one worker decompressed it all
// while the consumer slept on it in turns (a zstd trace of one arm64 CPU scaled ×9: 1.27 s, the
// worker busy, the walk and decode idle a third of it). The consumer, faster here than the worker,
// takes and decompresses chunks itself rather than sleep, and every chunk still comes out in order.
// zstd, so that taking a chunk (its few compressed bytes) is short beside decompressing it, as in a
// trace: a consumer that finds the stream being taken sleeps on.
TEST(ChunkPrefetcherThreads, TheConsumerDecompressesChunksRatherThanSleep) {
  constexpr int kChunks = 256;
  constexpr uint32_t kChunkBytes = 128 << 10;  // 32 MB: the worker fills kAheadBytes many times over
  const std::vector<std::vector<uint8_t>> tables{ZstdTable(kChunks, kChunkBytes)};
  const TableFile tf = WriteTables(tables);
  ASSERT_EQ(tf.tails.size(), 1u);
  for (bool pread : {true, false}) {  // a taken chunk copied out of the read buffer, or read in place
    ChunkPrefetcher p(Codec::kZstd, pread ? tf.file.get() : nullptr);
    p.AddStream(pread ? tf.tails[0] : std::span<const uint8_t>(tables[0]), tables[0].size() - kChunkCountSize);
    p.Start(1);
    ChunkPrefetcher::Chunk chunk;
    ChunkPrefetcher::StreamEnd end;
    int chunks = 0;
    // Its ends only: a consumer that compared every byte (slower still under a sanitizer) would not
    // catch up with the worker.
    for (; p.Next(0, &chunk, &end); ++chunks) {
      const uint8_t want = static_cast<uint8_t>('a' + chunks % 26);
      ASSERT_FALSE(chunk.corrupt) << chunks;
      ASSERT_EQ(chunk.bytes.size(), kChunkBytes) << chunks;
      ASSERT_TRUE(chunk.bytes.front() == want && chunk.bytes.back() == want) << chunks;
    }
    EXPECT_EQ(chunks, kChunks);
    EXPECT_FALSE(end.truncated || end.size_mismatch || end.count_mismatch);
    EXPECT_GT(p.ConsumerTook(), 0u) << "chunks the consumer decompressed, " << (pread ? "pread" : "in place");
  }
}

// Where load moves from CPU to CPU the merger reads one stream on its own for a while, every other
// one chunk deep (the budget shared by 256 streams, each a chunk at least): that stream must be
// filled further ahead, or the consumer sleeps on it at every chunk (67 k futex calls on a 256-CPU
// trace in consecutive runs, 1 k on 2 CPUs).
TEST(ChunkPrefetcherThreads, AStreamReadOnItsOwnIsFilledAhead) {
  constexpr int kStreams = 256, kLong = 200;
  constexpr uint32_t kChunkBytes = 16 << 10;  // the 256 streams' share of the ahead budget each
  std::vector<std::vector<uint8_t>> tables = EvenTables(kStreams, 1, kChunkBytes);
  tables[0] = EvenTables(1, kLong, kChunkBytes)[0];
  const TableFile tf = WriteTables(tables);
  ChunkPrefetcher p(Codec::kNone, tf.file.get());
  for (size_t i = 0; i < tables.size(); ++i) p.AddStream(tf.tails[i], tables[i].size() - kChunkCountSize);
  p.Start(1);
  ChunkPrefetcher::Chunk chunk;
  ChunkPrefetcher::StreamEnd end;
  int chunks = 0;
  for (; p.Next(0, &chunk, &end); ++chunks) {
    ASSERT_EQ(chunk.bytes, std::vector<uint8_t>(kChunkBytes, static_cast<uint8_t>('a' + chunks % 26)));
  }
  EXPECT_EQ(chunks, kLong);
  EXPECT_LE(p.ConsumerWaits(), uint64_t{kLong} / 2) << "sleeps on the one stream read";
  for (int i = 1; i < kStreams; ++i) {
    ASSERT_TRUE(p.Next(i, &chunk, &end)) << i;
    EXPECT_FALSE(p.Next(i, &chunk, &end)) << i;
  }
  EXPECT_LE(p.PeakReadyBytes(), ChunkPrefetcher::kAheadBytes + size_t{kStreams} * kChunkBytes);
}

}  // namespace
}  // namespace exitscope
