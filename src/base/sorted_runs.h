// Sorts a range that is a few ascending runs, as a perf.data round is (perf copies each CPU's
// buffer in turn, each in time order) and as a sorted remainder followed by a round is.
// In: [first, last), a strict total order `less` (no two elements equal), a scratch vector the
// caller keeps. Out: the range in std::sort's order (the keys being unique, there is only one).
// Assumption: the scratch vector is reused call after call; on this kind of VM a fresh page costs
// ~12 us on first write, so neither pass allocates once the scratch has grown (std::inplace_merge
// takes a new temporary buffer each call, std::sort compares n log n times with a mispredicted
// branch each).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace exitscope {

// More ascending runs than this: std::sort (pairwise merging costs one pass per doubling of runs).
inline constexpr size_t kMaxMergedRuns = 64;

// Merges `runs` neighbouring sorted runs of src[0, n) (run k starts at cuts[k], cuts[0] == 0)
// pairwise and bottom up, each pass from one buffer into the other (both n long): returns the one
// that holds the whole order (src after an even number of passes, dst after an odd one). `cuts` is
// overwritten.
template <typename T, typename Less>
T* MergeRunsPairwise(T* src, T* dst, size_t* cuts, size_t runs, size_t n, Less less) {
  while (runs > 1) {
    size_t kept = 0;
    for (size_t k = 0; k < runs; k += 2) {
      const size_t b = cuts[k];
      const size_t m = k + 1 < runs ? cuts[k + 1] : n;
      const size_t e = k + 2 < runs ? cuts[k + 2] : n;
      std::merge(src + b, src + m, src + m, src + e, dst + b, less);
      cuts[kept++] = b;
    }
    runs = kept;
    std::swap(src, dst);
  }
  return src;
}

// Returns the number of ascending runs the range had (1: already sorted; above kMaxMergedRuns: it
// was sorted with std::sort).
template <typename T, typename Less>
size_t SortAscendingRuns(T* first, T* last, Less less, std::vector<T>* scratch) {
  const size_t n = static_cast<size_t>(last - first);
  if (n < 2) return 1;
  size_t cuts[kMaxMergedRuns + 1];
  size_t runs = 0;
  cuts[runs++] = 0;
  for (size_t i = 1; i < n; ++i) {
    if (!less(first[i], first[i - 1])) continue;
    if (runs == kMaxMergedRuns) {
      std::sort(first, last, less);
      return kMaxMergedRuns + 1;
    }
    cuts[runs++] = i;
  }
  if (runs == 1) return 1;
  if (scratch->size() < n) scratch->resize(n);
  T* sorted = MergeRunsPairwise(first, scratch->data(), cuts, runs, n, less);
  if (sorted != first) std::copy(sorted, sorted + n, first);
  return runs;
}

}  // namespace exitscope
