// A read prefetch that survives inlining. In: an address about to be read (it need not be valid:
// a prefetch never faults). Out: the cache line asked for, nothing else.
// Why not __builtin_prefetch alone: g++ 12 -O2 drops it once the function holding it is inlined
// into a caller where the prefetch's result is "unused" (seen with an inline member that indexes a
// std::vector: no prefetch instruction was left in the binary). The empty asm that takes the
// address keeps the prefetch, and costs no instruction.
#pragma once

namespace exitscope {

inline void PrefetchForRead(const void* p) {
  __builtin_prefetch(p);
  asm volatile("" : : "r"(p));
}

}  // namespace exitscope
