#include "advise/bounded_stats.h"

#include <algorithm>

namespace exitscope {
void FlatCounts::Add(uint64_t key, uint64_t count) {
  if ((size_ + 1) * 2 > slots_.size()) Grow();
  const size_t mask = slots_.size() - 1;
  for (size_t i = Slot(key, mask);; i = (i + 1) & mask) {
    auto& s = slots_[i];
    if (s.first == key) {
      s.second += count;
      return;
    }
    if (s.first == kEmpty) {
      s = {key, count};
      ++size_;
      return;
    }
  }
}

void FlatCounts::Grow() {
  std::vector<std::pair<uint64_t, uint64_t>> old = std::move(slots_);
  slots_.assign(std::max<size_t>(16, old.size() * 2), {kEmpty, 0});
  size_ = 0;
  for (const auto& s : old) {
    if (s.first != kEmpty) Add(s.first, s.second);
  }
}

std::vector<std::pair<uint64_t, uint64_t>> FlatCounts::Entries() const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  out.reserve(size_);
  for (const auto& s : slots_) {
    if (s.first != kEmpty) out.push_back(s);
  }
  return out;
}

void ValueHistogram::Apply() const {
  if (pending_n_ == 0) return;
  for (uint32_t i = 0; i < pending_n_; ++i) Insert(pending_[i], 1);
  pending_n_ = 0;
}

void ValueHistogram::Requantize(int bits) const {
  bits_ = bits;
  FlatCounts next;
  for (const auto& [v, n] : counts_.Entries()) next.Add(Quantize(v), n);
  counts_ = std::move(next);
}

void ValueHistogram::Coarsen() const {
  // From exact to 16 significant bits (1/65536 relative), then a bit less until the buckets fit in
  // cap/2: the next coarsening is then at least cap/2 new values away.
  Requantize(std::min(bits_ - 1, 16));
  while (counts_.size() > cap_ / 2 && bits_ > 1) Requantize(bits_ - 1);
}

uint64_t ValueHistogram::KthSmallest(uint64_t k) const {
  Apply();
  auto e = counts_.Entries();
  std::sort(e.begin(), e.end());
  uint64_t seen = 0;
  for (const auto& [v, n] : e) {
    seen += n;
    if (k < seen) return v;
  }
  return e.empty() ? 0 : e.back().first;
}

uint64_t ValueHistogram::ExcessOver(uint64_t c) const {
  Apply();
  uint64_t sum = 0;
  for (const auto& [v, n] : counts_.Entries()) {
    if (v > c) sum += (v - c) * n;
  }
  return sum;
}

}  // namespace exitscope
