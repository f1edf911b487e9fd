// EXITSCOPE_CHECK (base/check.h): a broken invariant of our own code stops the run with exit 70 and a
// message naming the place, never a wrong result.
#include "base/check.h"

#include <gtest/gtest.h>

namespace {

int Twice(int x) {
  EXITSCOPE_CHECK(x >= 0);
  return 2 * x;
}

TEST(CheckTest, PassingCheckReturnsNormally) { EXPECT_EQ(Twice(21), 42); }

TEST(CheckTest, FailingCheckExitsSeventyNamingTheCondition) {
  EXPECT_EXIT(Twice(-1), ::testing::ExitedWithCode(70), "internal check failed at .*check_test.cc:.*x >= 0");
}

}  // namespace
