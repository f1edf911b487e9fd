#include "base/thread_priority.h"

#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

namespace exitscope {

void LowerThreadPriority(int nice_increment) {
  if (nice_increment <= 0) return;
  // PRIO_PROCESS with a thread id: the thread's own nice value (a process's other threads keep theirs).
  const auto tid = static_cast<id_t>(syscall(SYS_gettid));
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, tid);
  if (now == -1 && errno != 0) return;
  setpriority(PRIO_PROCESS, tid, now + nice_increment);  // capped at 19 by the kernel
}

}  // namespace exitscope
