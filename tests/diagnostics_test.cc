// Diagnostics and the one registry of counters (model/diagnostic_ids.h).
#include "model/diagnostics.h"

#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

namespace exitscope {
namespace {

TEST(DiagnosticsTest, InfoCountersAreNotDataLoss) {
  Diagnostics d;
  d.Bump(DiagId::kPairExitBeforeFirstEntry);
  EXPECT_FALSE(d.HasDataLoss());
  d.Bump(DiagId::kTracedatMissedEvents, 5);
  EXPECT_TRUE(d.HasDataLoss());
  EXPECT_EQ(d.Count(DiagId::kTracedatMissedEvents), 5u);
  EXPECT_EQ(d.Count("tracedat.missed_events"), 5u);
  ASSERT_EQ(d.NonZero().size(), 2u);
  EXPECT_EQ(d.NonZero()[1].description, DiagSpecOf(DiagId::kTracedatMissedEvents).meaning);
}

TEST(DiagnosticsTest, MergeAddsCounts) {
  Diagnostics a, b;
  a.Bump(DiagId::kSortOutOfOrder, 2);
  b.Bump(DiagId::kSortOutOfOrder, 3);
  a.Merge(b);
  EXPECT_EQ(a.Count(DiagId::kSortOutOfOrder), 5u);
  EXPECT_TRUE(a.HasDataLoss());  // kError counts as data loss
}

TEST(DiagnosticsTest, SubNamedCounterKeepsTheIdsSeverity) {
  Diagnostics d;
  d.Bump(DiagId::kDecodeMissingField, "kvm_exit.vcpu_id");
  EXPECT_EQ(d.Count("decode.missing_field.kvm_exit.vcpu_id"), 1u);
  EXPECT_FALSE(d.HasDataLoss());
}

// Every counter is declared once: unique names of the form stage.what, each with a meaning.
TEST(DiagnosticsTest, RegistryNamesAreUniqueAndWellFormed) {
  std::set<std::string> names;
  const std::regex form(R"([a-z]+\.[a-z0-9_]+)");
  for (size_t i = 0; i < static_cast<size_t>(DiagId::kCount); ++i) {
    const DiagSpec& spec = DiagSpecOf(static_cast<DiagId>(i));
    EXPECT_TRUE(names.insert(std::string(spec.name)).second) << "declared twice: " << spec.name;
    EXPECT_TRUE(std::regex_match(std::string(spec.name), form)) << spec.name;
    EXPECT_GT(spec.meaning.size(), 10u) << spec.name;
  }
}

}  // namespace
}  // namespace exitscope
