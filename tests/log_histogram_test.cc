#include "analysis/log_histogram.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace exitscope {
namespace {

TEST(LogHistogramTest, BucketsCoverEveryValueContiguously) {
  for (uint64_t v : std::vector<uint64_t>{0, 1, 127, 128, 255, 256, 1000, 123456789, UINT64_MAX}) {
    uint32_t b = LogHistogram::BucketOf(v);
    EXPECT_LE(LogHistogram::BucketLow(b), v);
    EXPECT_GE(LogHistogram::BucketHigh(b), v);
  }
  for (uint32_t b = 0; b + 1 < 2000; ++b) EXPECT_EQ(LogHistogram::BucketHigh(b) + 1, LogHistogram::BucketLow(b + 1));
}

TEST(LogHistogramTest, ExactMomentsAndPercentilesWithinOnePercent) {
  std::mt19937_64 rng(42);
  std::lognormal_distribution<double> dist(9.0, 2.0);  // ~8 us median, heavy tail like exit times
  LogHistogram h;
  std::vector<uint64_t> values;
  uint64_t sum = 0;
  for (int i = 0; i < 200000; ++i) {
    uint64_t v = static_cast<uint64_t>(dist(rng));
    values.push_back(v);
    sum += v;
    h.Add(v);
  }
  std::sort(values.begin(), values.end());
  EXPECT_EQ(h.count(), values.size());
  EXPECT_EQ(h.sum(), sum);
  EXPECT_EQ(h.min(), values.front());
  EXPECT_EQ(h.max(), values.back());
  for (double q : {0.0, 0.5, 0.9, 0.99, 0.999, 1.0}) {
    size_t rank = std::max<size_t>(1, static_cast<size_t>(std::ceil(q * values.size())));
    double exact = static_cast<double>(values[rank - 1]);
    double got = static_cast<double>(h.Percentile(q));
    EXPECT_LE(std::abs(got - exact), std::max(1.0, exact * 0.01)) << "q=" << q;
  }
}

TEST(LogHistogramTest, MergeEqualsAddingEverything) {
  LogHistogram a, b, all;
  for (uint64_t v = 1; v < 100000; v += 37) {
    (v % 2 ? a : b).Add(v);
    all.Add(v);
  }
  a.Merge(b);
  EXPECT_EQ(a.count(), all.count());
  EXPECT_EQ(a.sum(), all.sum());
  EXPECT_EQ(a.Percentile(0.9), all.Percentile(0.9));
  EXPECT_EQ(a.min(), all.min());
  EXPECT_EQ(a.max(), all.max());
}

}  // namespace
}  // namespace exitscope
