// CHECKs for our own bugs (Perfetto's PERFETTO_CHECK): an invariant of exitscope's code, never of
// the input. Bad input is a Diagnostics counter or an Error; a failed CHECK means the code is wrong,
// so the run stops at once with exit 70 (EX_SOFTWARE) and a message naming the place, instead of
// printing a wrong result.
#pragma once

namespace exitscope {

[[noreturn]] void CheckFailed(const char* file, int line, const char* condition);

}  // namespace exitscope

#define EXITSCOPE_CHECK(condition)                              \
  do {                                                          \
    if (__builtin_expect(!(condition), 0)) {                    \
      ::exitscope::CheckFailed(__FILE__, __LINE__, #condition); \
    }                                                           \
  } while (0)
