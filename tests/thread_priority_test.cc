// LowerThreadPriority (base/thread_priority.h): the calling thread's nice value goes up, the
// process's other threads keep theirs (the sliced reader's use: tracedat_slices_test.cc).
#include "base/thread_priority.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <thread>

namespace exitscope {
namespace {

int ThreadNice(pid_t tid) {
  errno = 0;
  return getpriority(PRIO_PROCESS, static_cast<id_t>(tid));
}

pid_t ThisThread() { return static_cast<pid_t>(syscall(SYS_gettid)); }

TEST(ThreadPriorityTest, OnlyTheCallingThreadGoesDown) {
  const int before = ThreadNice(ThisThread());
  int in_thread_before = 0, in_thread_after = 0;
  std::thread t([&] {
    in_thread_before = ThreadNice(ThisThread());
    LowerThreadPriority(5);
    in_thread_after = ThreadNice(ThisThread());
  });
  t.join();
  EXPECT_EQ(in_thread_before, before);  // a new thread starts at its creator's value
  EXPECT_EQ(in_thread_after, std::min(before + 5, 19));
  EXPECT_EQ(ThreadNice(ThisThread()), before);
}

TEST(ThreadPriorityTest, NothingBelowOneStep) {
  std::thread t([] {
    const int before = ThreadNice(ThisThread());
    LowerThreadPriority(0);
    LowerThreadPriority(-3);  // never raises: that would need privilege and is not what it is for
    EXPECT_EQ(ThreadNice(ThisThread()), before);
  });
  t.join();
}

}  // namespace
}  // namespace exitscope
