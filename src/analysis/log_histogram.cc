#include "analysis/log_histogram.h"

#include <algorithm>
#include <bit>
#include <cmath>

namespace exitscope {

LogHistogram::Octave* LogHistogram::NewOctave(uint32_t octave) {
  octaves_[octave] = std::make_unique<Octave>();  // value-initialized: zeroed
  return octaves_[octave].get();
}

uint64_t LogHistogram::BucketLow(uint32_t bucket) {
  uint32_t octave = bucket / kSub, slot = bucket % kSub;
  if (octave == 0) return slot;
  return (kSub + slot) << (octave - 1);
}

uint64_t LogHistogram::BucketHigh(uint32_t bucket) {
  uint32_t octave = bucket / kSub;
  if (octave == 0) return bucket;
  return BucketLow(bucket) + ((uint64_t{1} << (octave - 1)) - 1);
}

void LogHistogram::Merge(const LogHistogram& other) {
  for (int o = 0; o < kOctaves; ++o) {
    if (!other.octaves_[o]) continue;
    if (!octaves_[o]) octaves_[o] = std::make_unique<Octave>(Octave{});
    for (uint64_t i = 0; i < kSub; ++i) (*octaves_[o])[i] += (*other.octaves_[o])[i];
  }
  count_ += other.count_;
  sum_ += other.sum_;
  min_ = std::min(min_, other.min_);
  max_ = std::max(max_, other.max_);
}

uint64_t LogHistogram::Percentile(double q) const {
  if (count_ == 0) return 0;
  q = std::clamp(q, 0.0, 1.0);
  uint64_t rank = static_cast<uint64_t>(std::ceil(q * static_cast<double>(count_)));
  rank = std::clamp<uint64_t>(rank, 1, count_);
  uint64_t seen = 0;
  for (int o = 0; o < kOctaves; ++o) {
    if (!octaves_[o]) continue;
    for (uint64_t i = 0; i < kSub; ++i) {
      seen += (*octaves_[o])[i];
      if (seen >= rank) {
        uint32_t b = static_cast<uint32_t>(o * kSub + i);
        uint64_t lo = BucketLow(b), hi = BucketHigh(b);
        uint64_t mid = lo + (hi - lo) / 2;
        return std::clamp(mid, min_, max_);
      }
    }
  }
  return max_;
}

}  // namespace exitscope
