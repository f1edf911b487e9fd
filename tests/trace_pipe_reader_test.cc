// trace_pipe_reader (sources/live/trace_pipe_reader.h): a raw ring-buffer page's header (commit
// flags, the stored missed-events count) and per_cpu/cpuN/stats text.
#include "sources/live/trace_pipe_reader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace exitscope {
namespace {

TEST(RingPageHeader, MissedEventsFlagAndStoredCount) {
  std::vector<uint8_t> page(4096);
  uint64_t ts = 12345, commit = 40 | (1ull << 31) | (1ull << 30), missed = 77;
  std::memcpy(page.data(), &ts, 8);
  std::memcpy(page.data() + 8, &commit, 8);
  std::memcpy(page.data() + 16 + 40, &missed, 8);
  RingPageHeader h = ParseRingPageHeader(page);
  EXPECT_EQ(h.ts, 12345u);
  EXPECT_EQ(h.data_bytes, 40u);
  EXPECT_TRUE(h.missed);
  EXPECT_EQ(h.missed_count, 77u);
  commit = 40 | (1ull << 31);  // flagged, count not stored
  std::memcpy(page.data() + 8, &commit, 8);
  h = ParseRingPageHeader(page);
  EXPECT_TRUE(h.missed);
  EXPECT_EQ(h.missed_count, 0u);
}

TEST(CpuStats, ParsesOverrunAndDropped) {
  CpuLoss l;
  ParseCpuStats("entries: 5\noverrun: 12\ncommit overrun: 0\nbytes: 80\ndropped events: 3\nread events: 9\n", &l);
  EXPECT_EQ(l.entries, 5u);
  EXPECT_EQ(l.overrun, 12u);
  EXPECT_EQ(l.dropped, 3u);
  EXPECT_EQ(l.Lost(), 15u);
  // A commit overrun (nested writers around the whole buffer) is lost too, not an "overrun:".
  ParseCpuStats("entries: 0\noverrun: 0\ncommit overrun: 4\ndropped events: 0\n", &l);
  EXPECT_EQ(l.commit_overrun, 4u);
  EXPECT_EQ(l.overrun, 0u);
  EXPECT_EQ(l.Lost(), 4u);
}

}  // namespace
}  // namespace exitscope
