// Bounded-memory statistics the streaming advisor keeps instead of every exit (issue 18): a value
// histogram that answers quantiles and "sum of the excess over c" exactly while it holds few distinct
// values and to a stated relative precision after, and a top-K table of keys exact up to its
// capacity. In: one value / key per exit. Out: the figures the rules print.
// Assumption: the number of distinct handling times and of distinct RIPs/keys on a real trace stays
// under the capacities (so every golden figure is exact); a pathological trace costs precision, never
// memory — each structure's footprint is capped whatever the trace's length.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/prefetch.h"

namespace exitscope {

// Counts per uint64 key in one open-addressing table (linear probing, power-of-two size, load ≤ 1/2).
// The key ~0 is reserved as the empty slot marker.
class FlatCounts {
 public:
  void Add(uint64_t key, uint64_t count = 1);
  // Asks the cache for the slot `key` would probe first (no effect on the counts).
  void Prefetch(uint64_t key) const {
    if (!slots_.empty()) PrefetchForRead(&slots_[Slot(key, slots_.size() - 1)]);
  }
  size_t size() const { return size_; }
  size_t slots() const { return slots_.size(); }
  void clear() {
    slots_.clear();
    size_ = 0;
  }
  // Every (key, count), in no particular order.
  std::vector<std::pair<uint64_t, uint64_t>> Entries() const;

 private:
  static constexpr uint64_t kEmpty = ~0ull;
  // Fibonacci hashing: handling times cluster in low bits, the table index takes the high ones.
  static size_t Slot(uint64_t key, size_t mask) {
    return static_cast<size_t>((key * 0x9e3779b97f4a7c15ull) >> 20) & mask;
  }
  void Grow();
  std::vector<std::pair<uint64_t, uint64_t>> slots_;
  size_t size_ = 0;
};

// Values (ns) with their counts. Exact while at most `cap` distinct values were added; past that the
// values are rounded to `precision_bits` significant bits (bucket midpoints), the precision dropping
// one bit at a time until the distinct buckets fit in cap / 2 again. So memory is O(cap) whatever
// the count, and a quantile is off by at most 2^-precision_bits relative once inexact.
// Adds are queued kBatch at a time and applied in order, each value's slot asked of the cache as it
// is queued: a table of ~30 K distinct handling times is past L2, and one insert at a time waited on
// memory for each (issue 18: ~a quarter of advise's CPU); the prefetch alone, against none, ~3 %
// (median; within this VM's noise at best). Every read applies the queue first, so the counts, the
// precision and the moment it coarsens are those of one-at-a-time adds.
class ValueHistogram {
 public:
  static constexpr size_t kDefaultCap = 1 << 15;
  explicit ValueHistogram(size_t cap = kDefaultCap) : cap_(cap) {}
  void Add(uint64_t v) {
    ++count_;
    counts_.Prefetch(Quantize(v));
    pending_[pending_n_++] = v;
    if (pending_n_ == kBatch) Apply();
  }
  void Add(uint64_t v, uint64_t n) {
    Apply();
    count_ += n;
    Insert(v, n);
  }
  // Adds every value of `other` (at the coarser of the two precisions).
  void Merge(const ValueHistogram& other) {
    Apply();
    other.Apply();
    if (other.bits_ < bits_) Requantize(other.bits_);
    for (const auto& [v, n] : other.counts_.Entries()) Add(v, n);
  }
  uint64_t count() const { return count_; }
  bool exact() const {
    Apply();
    return bits_ == 64;
  }
  int precision_bits() const {
    Apply();
    return bits_;
  }
  size_t distinct() const {
    Apply();
    return counts_.size();
  }
  // The k-th smallest value (0-based), as a sorted vector's v[k]; 0 when empty.
  uint64_t KthSmallest(uint64_t k) const;
  // As a sorted vector v of the values: the median v[n / 2], a quantile v[floor(q · (n − 1))].
  uint64_t Median() const { return count_ ? KthSmallest(count_ / 2) : 0; }
  uint64_t Quantile(double q) const {
    return count_ ? KthSmallest(static_cast<uint64_t>(q * static_cast<double>(count_ - 1))) : 0;
  }
  // Σ max(0, v − c) over the values.
  uint64_t ExcessOver(uint64_t c) const;

 private:
  static constexpr size_t kBatch = 32;  // inserts whose cache misses overlap
  // Inline: every add calls it twice, for the slot it asks of the cache and at its insert (the
  // precision may have dropped in between).
  uint64_t Quantize(uint64_t v) const {
    if (bits_ >= 64) return v;
    const int width = std::bit_width(v);
    if (width <= bits_) return v;
    const int shift = width - bits_;
    // The bucket's midpoint: a quantile's error stays within half a bucket either way.
    return ((v >> shift) << shift) | (1ull << (shift - 1));
  }
  void Insert(uint64_t v, uint64_t n) const {
    counts_.Add(Quantize(v), n);
    if (counts_.size() > cap_) Coarsen();
  }
  void Apply() const;  // the queued adds, in order
  void Coarsen() const;
  void Requantize(int bits) const;
  size_t cap_;
  uint64_t count_ = 0;
  // The table and its precision change when queued adds are applied, which reads do first.
  mutable int bits_ = 64;  // significant bits kept; 64 = exact
  mutable FlatCounts counts_;
  mutable uint32_t pending_n_ = 0;
  mutable std::array<uint64_t, kBatch> pending_;
};

// Per-key aggregates, exact while at most `cap` distinct keys were seen. Past that, when the table is
// full the lighter half (by the caller's weight) is dropped and `dropped` remembers the heaviest
// weight dropped: a key's figures are then lower bounds, and any key heavier than that bound in
// total is still held (the "lossy counting" guarantee). exact() says which case a table is in.
template <typename Key, typename Value, typename Hash = std::hash<Key>>
class TopKTable {
 public:
  explicit TopKTable(size_t cap) : cap_(cap) {}
  // The entry for key, inserted (value-initialised) if new. weight(value) orders eviction.
  template <typename WeightFn>
  Value& At(const Key& key, WeightFn weight) {
    // A few recent keys first (the map's nodes stay put until Evict, which empties this): matched
    // exits come from a few RIPs and keys at a time, and each hash lookup chased a node.
    Recent& r = recent_[Hash{}(key) % kRecent];
    if (r.value && r.key == key) return *r.value;
    auto it = map_.find(key);
    if (it == map_.end()) {
      if (map_.size() >= cap_) Evict(weight);
      it = map_.try_emplace(key).first;
    }
    r = Recent{key, &it->second};
    return it->second;
  }
  bool exact() const { return dropped_keys_ == 0; }
  uint64_t dropped_keys() const { return dropped_keys_; }
  uint64_t dropped_max_weight() const { return dropped_max_weight_; }
  size_t size() const { return map_.size(); }
  size_t capacity() const { return cap_; }
  const std::unordered_map<Key, Value, Hash>& entries() const { return map_; }

 private:
  template <typename WeightFn>
  void Evict(WeightFn weight) {
    std::vector<std::pair<uint64_t, Key>> w;
    w.reserve(map_.size());
    for (const auto& [k, v] : map_) w.emplace_back(weight(v), k);
    const size_t keep = cap_ / 2;
    std::nth_element(w.begin(), w.begin() + (w.size() - keep), w.end(),
                     [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t i = 0; i < w.size() - keep; ++i) {
      dropped_max_weight_ = std::max(dropped_max_weight_, w[i].first);
      map_.erase(w[i].second);
      ++dropped_keys_;
    }
    recent_ = {};
  }
  struct Recent {
    Key key{};
    Value* value = nullptr;
  };
  static constexpr size_t kRecent = 16;
  std::array<Recent, kRecent> recent_{};
  size_t cap_;
  uint64_t dropped_keys_ = 0, dropped_max_weight_ = 0;
  std::unordered_map<Key, Value, Hash> map_;
};

}  // namespace exitscope
