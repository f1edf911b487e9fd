#include "model/diagnostics.h"

#include <gtest/gtest.h>

namespace exitscope {
namespace {

TEST(DiagnosticsTest, InfoCountersAreNotDataLoss) {
  Diagnostics d;
  d.Bump("pair.exit_before_first_entry", Severity::kInfo, "exit seen before any entry");
  EXPECT_FALSE(d.HasDataLoss());
  d.Bump("tracedat.missed_events", Severity::kDataLoss, "ring buffer overwrote events", 5);
  EXPECT_TRUE(d.HasDataLoss());
  EXPECT_EQ(d.Count("tracedat.missed_events"), 5u);
  ASSERT_EQ(d.NonZero().size(), 2u);
}

TEST(DiagnosticsTest, MergeAddsCounts) {
  Diagnostics a, b;
  a.Bump("x", Severity::kError, "x", 2);
  b.Bump("x", Severity::kError, "x", 3);
  a.Merge(b);
  EXPECT_EQ(a.Count("x"), 5u);
}

}  // namespace
}  // namespace exitscope
