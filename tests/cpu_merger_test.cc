// CPU merger: seeded random stress against a reference sort, plus clock steps counted.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "sort/cpu_merger.h"

namespace exitscope {
namespace {

class VectorStream : public CpuRecordStream {
 public:
  VectorStream(int cpu, std::vector<uint64_t> ts) : cpu_(cpu), ts_(std::move(ts)) {}
  bool Advance() override {
    if (pos_ >= ts_.size()) return false;
    head.ts_ns = ts_[pos_];
    head.cpu = cpu_;
    head.tid = static_cast<int32_t>(pos_++);
    return true;
  }

 private:
  int cpu_;
  std::vector<uint64_t> ts_;
  size_t pos_ = 0;
};

void Stress(uint32_t seed, int cpus, int max_events) {
  std::mt19937 rng(seed);
  CpuMerger merger;
  std::vector<std::tuple<uint64_t, int, int>> expected;  // ts, cpu, index
  for (int c = 0; c < cpus; ++c) {
    std::vector<uint64_t> ts;
    uint64_t t = rng() % 1000;
    int n = static_cast<int>(rng() % (max_events + 1));
    for (int i = 0; i < n; ++i) {
      t += rng() % 50;  // equal timestamps across and within CPUs are common
      ts.push_back(t);
      expected.emplace_back(t, c, i);
    }
    merger.Add(std::make_unique<VectorStream>(c, ts));
  }
  std::sort(expected.begin(), expected.end());
  RawEvent ev;
  size_t i = 0;
  while (merger.Next(&ev, nullptr)) {
    ASSERT_LT(i, expected.size());
    auto [ts, cpu, idx] = expected[i++];
    ASSERT_EQ(ev.ts_ns, ts) << "seed " << seed;
    ASSERT_EQ(ev.cpu, cpu) << "seed " << seed << " at " << i;  // ties: lower CPU first
    ASSERT_EQ(ev.tid, idx);
  }
  EXPECT_EQ(i, expected.size());
  EXPECT_EQ(merger.out_of_order(), 0u);
}

TEST(CpuMerger, RandomStressSmallAndLargeCpuCounts) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    for (int cpus : {1, 2, 3, 8, 9, 64, 256}) Stress(seed, cpus, cpus > 64 ? 40 : 300);
  }
}

TEST(CpuMerger, EmptyStreamsAndNoStreams) {
  CpuMerger none;
  RawEvent ev;
  EXPECT_FALSE(none.Next(&ev, nullptr));
  CpuMerger empty;
  empty.Add(std::make_unique<VectorStream>(0, std::vector<uint64_t>{}));
  empty.Add(std::make_unique<VectorStream>(1, std::vector<uint64_t>{5}));
  ASSERT_TRUE(empty.Next(&ev, nullptr));
  EXPECT_EQ(ev.cpu, 1);
  EXPECT_FALSE(empty.Next(&ev, nullptr));
}

TEST(CpuMerger, ClockStepBackIsPassedOnAndCounted) {
  CpuMerger m;
  m.Add(std::make_unique<VectorStream>(0, std::vector<uint64_t>{10, 20, 5, 30}));
  std::vector<uint64_t> out;
  RawEvent ev;
  while (m.Next(&ev, nullptr)) out.push_back(ev.ts_ns);
  EXPECT_EQ(out, (std::vector<uint64_t>{10, 20, 5, 30}));
  EXPECT_EQ(m.out_of_order(), 1u);
}

}  // namespace
}  // namespace exitscope
