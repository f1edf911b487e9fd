#include "base/check.h"

#include <cstdio>
#include <cstdlib>

#include "base/result.h"

namespace exitscope {

void CheckFailed(const char* file, int line, const char* condition) {
  std::fflush(stdout);
  std::fprintf(stderr,
               "error: internal check failed at %s:%d: %s [internal]\n"
               "hint: this is a bug in exitscope, not in your trace; please report it with the command "
               "line and, if you can, the input\n",
               file, line, condition);
  std::_Exit(kExitSoftware);
}

}  // namespace exitscope
