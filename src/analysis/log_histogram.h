// A log-linear histogram of non-negative integers (durations in ns) with bounded memory: 128 linear
// sub-buckets per power of two, so any percentile is within 1/256 (~0.4 %) of a recorded value;
// count, sum, min and max are exact. In: Add(value). Out: Percentile(q), exact moments.
// Assumption: values fit in 64 bits; octaves are allocated only when a value lands in them, so a
// histogram costs ~1 KiB per populated octave and at most ~58 KiB.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <memory>

namespace exitscope {

class LogHistogram {
 public:
  static constexpr int kSubBits = 7;
  static constexpr uint64_t kSub = uint64_t{1} << kSubBits;
  static constexpr int kOctaves = 64 - kSubBits + 1;

  LogHistogram() = default;
  LogHistogram(LogHistogram&&) = default;
  LogHistogram& operator=(LogHistogram&&) = default;

  // Inline: a report adds every timed exit to two histograms (its reason's and its group's).
  void Add(uint64_t value) {
    uint32_t b = BucketOf(value);
    Octave* oct = octaves_[b / kSub].get();
    if (!oct) [[unlikely]]
      oct = NewOctave(b / kSub);
    ++(*oct)[b % kSub];
    ++count_;
    sum_ += value;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  void Add(uint64_t value, uint64_t n) {
    if (n == 0) return;
    uint32_t b = BucketOf(value);
    Octave* oct = octaves_[b / kSub].get();
    if (!oct) oct = NewOctave(b / kSub);
    (*oct)[b % kSub] += n;
    count_ += n;
    sum_ += value * n;
    min_ = std::min(min_, value);
    max_ = std::max(max_, value);
  }
  void Merge(const LogHistogram& other);

  uint64_t count() const { return count_; }
  uint64_t sum() const { return sum_; }  // wraps only past 584 years of summed ns
  uint64_t min() const { return count_ ? min_ : 0; }
  uint64_t max() const { return max_; }
  double mean() const { return count_ ? static_cast<double>(sum_) / static_cast<double>(count_) : 0; }
  // q in [0, 1]: the smallest value v such that at least q of the values are <= v (nearest rank),
  // reported as its bucket's midpoint clamped to [min, max].
  uint64_t Percentile(double q) const;

  // Calls fn(bucket, n) for each non-empty bucket, ascending.
  template <typename Fn>
  void ForEachBucket(Fn&& fn) const {
    for (int o = 0; o < kOctaves; ++o) {
      if (!octaves_[o]) continue;
      for (uint64_t i = 0; i < kSub; ++i) {
        if (uint64_t n = (*octaves_[o])[i]) fn(static_cast<uint32_t>(o * kSub + i), n);
      }
    }
  }

  // Bucket index and bounds, exposed for tests.
  // Values below 2*kSub are their own bucket; above, octave g (>= 1) holds [kSub << (g-1), kSub << g)
  // in kSub equal slices.
  static uint32_t BucketOf(uint64_t value) {
    if (value < kSub) return static_cast<uint32_t>(value);
    int msb = 63 - std::countl_zero(value);
    int shift = msb - kSubBits;
    return static_cast<uint32_t>((shift + 1) * kSub + ((value >> shift) - kSub));
  }
  static uint64_t BucketLow(uint32_t bucket);
  static uint64_t BucketHigh(uint32_t bucket);  // inclusive

 private:
  using Octave = std::array<uint64_t, kSub>;
  // Out of line: Add stays a few instructions (a zeroed 1 KiB temporary made it keep a stack frame).
  [[gnu::noinline]] Octave* NewOctave(uint32_t octave);
  std::array<std::unique_ptr<Octave>, kOctaves> octaves_;
  uint64_t count_ = 0, sum_ = 0, min_ = UINT64_MAX, max_ = 0;
};

}  // namespace exitscope
