// ChunkPrefetcher on chunk tables built here (codec "none": a chunk's bytes are its pages), where
// the count and the CPU's size agree, part, or the file is cut: which chunks come out and how the
// stream says it ended, on the worker thread and inline alike. The same claims on real traces are
// damaged in tests/tracedat_damage_test.cc.
#include "sources/tracedat/chunk_prefetcher.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

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

struct Read {
  std::string chunks;  // each chunk's bytes, '|' after each
  ChunkPrefetcher::StreamEnd end;
};

Read ReadAll(const std::vector<uint8_t>& tail, uint64_t size, bool threaded) {
  ChunkPrefetcher p(Codec::kNone);
  const int s = p.AddStream(tail, size);
  if (threaded) p.Start();
  Read r;
  ChunkPrefetcher::Chunk c;
  while (p.Next(s, &c, &r.end)) {
    EXPECT_FALSE(c.corrupt);
    r.chunks += std::string(c.bytes.begin(), c.bytes.end()) + "|";
  }
  return r;
}

class ChunkPrefetcherClaims : public ::testing::TestWithParam<bool> {};

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

INSTANTIATE_TEST_SUITE_P(InlineAndThreaded, ChunkPrefetcherClaims, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "threaded" : "inline"; });

// Several CPUs' tables decompressed ahead on one to three threads (each CPU on one thread at a
// time): every stream's chunks come out whole and in file order, read in turn as the CPU merger
// does, and each stream ends as it does inline.
TEST(ChunkPrefetcherThreads, EveryStreamInOrderOnSeveralThreads) {
  std::vector<std::vector<uint8_t>> tables;
  std::vector<uint64_t> sizes;
  for (int chunks : {2000, 3, 570, 0, 1200}) {
    uint64_t bytes = 0;
    tables.push_back(Table(static_cast<uint32_t>(chunks), chunks, &bytes));
    sizes.push_back(bytes);
  }
  auto read = [&](unsigned threads) {
    ChunkPrefetcher p(Codec::kNone);
    for (size_t i = 0; i < tables.size(); ++i) p.AddStream(tables[i], sizes[i]);
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
  for (int round = 0; round < 5; ++round) {
    for (unsigned threads : {1u, 2u, 3u}) EXPECT_EQ(read(threads), want) << threads << " threads";
  }
}

}  // namespace
}  // namespace exitscope
