#include "base/huge_pages.h"

#include <sys/mman.h>

#include <new>

namespace exitscope {
namespace {

constexpr size_t kSmallPageBytes = 4096;

// Under kHugeAllocationMin: whole 4 KB pages, no huge page asked for. A huge page is resident and
// zeroed whole at its first write: a small buffer in one cost 2 MB (a perf.data fuzz input cut
// into a chunk per record held ~700 MB, at a third of the executions per second).
bool Small(size_t bytes) { return bytes < kHugeAllocationMin; }

size_t Rounded(size_t bytes) {
  const size_t page = Small(bytes) ? kSmallPageBytes : kHugePageBytes;
  return (bytes + page - 1) & ~(page - 1);
}

}  // namespace

void* MapHugePages(size_t bytes) {
  const size_t size = Rounded(bytes);
  if (Small(bytes)) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    return p;
  }
  // A huge page's worth more than asked, so that a boundary lies inside; the rest is given back.
  void* p = mmap(nullptr, size + kHugePageBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  const uintptr_t start = reinterpret_cast<uintptr_t>(p);
  const uintptr_t aligned = (start + kHugePageBytes - 1) & ~(kHugePageBytes - 1);
  if (aligned > start) munmap(p, aligned - start);
  const uintptr_t end = start + size + kHugePageBytes;
  if (end > aligned + size) munmap(reinterpret_cast<void*>(aligned + size), end - (aligned + size));
  // Best effort: a kernel without transparent huge pages leaves plain pages.
  madvise(reinterpret_cast<void*>(aligned), size, MADV_HUGEPAGE);
  return reinterpret_cast<void*>(aligned);
}

void UnmapHugePages(void* p, size_t bytes) { munmap(p, Rounded(bytes)); }

size_t MappedHugePagesBytes(size_t bytes) { return Rounded(bytes); }

}  // namespace exitscope
