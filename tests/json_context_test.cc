// Every JSON output that reads a trace starts alike (report/json_context.h): schema, tool and
// tool_version, one "context" block with the same fields and values for the same trace, and ends with
// "diagnostics" and "partial". Run on real shared traces through the binary, as scripts read them.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace {

using exitscope::testing::RunCommand;
using nlohmann::json;

std::string Trace(const std::string& rel) { return std::string(EXITSCOPE_SHARED_DIR) + "/traces/" + rel; }

json RunJson(const std::string& args) {
  auto r = RunCommand(std::string(EXITSCOPE_BINARY) + " " + args + " 2>/dev/null");
  EXPECT_TRUE(r.status == 0 || r.status == 65) << args << " exited " << r.status;
  return json::parse(r.out, nullptr, false);
}

class JsonContext : public ::testing::TestWithParam<const char*> {};

TEST_P(JsonContext, ReportRipAndAdviseShareTheBlock) {
  const std::string t = Trace(GetParam());
  json report = RunJson("report --json " + t);
  json rip = RunJson("report --by rip --json " + t);
  json advise = RunJson("advise --json " + t);
  ASSERT_FALSE(report.is_discarded());
  ASSERT_FALSE(rip.is_discarded());
  ASSERT_FALSE(advise.is_discarded());
  for (const json* j : {&report, &rip, &advise}) {
    EXPECT_EQ((*j)["tool"], "exitscope");
    EXPECT_EQ((*j)["tool_version"], report["tool_version"]);
    EXPECT_TRUE((*j)["schema"].get<std::string>().starts_with("exitscope."));
    ASSERT_TRUE(j->contains("context"));
    // Same trace, no filters: the same block, key for key (vms included: one VM identity).
    EXPECT_EQ((*j)["context"], report["context"]) << (*j)["schema"];
    EXPECT_EQ((*j)["diagnostics"], report["diagnostics"]) << (*j)["schema"];
    EXPECT_EQ((*j)["partial"], report["partial"]) << (*j)["schema"];
  }
  EXPECT_GT(report["context"]["duration_ns"].get<uint64_t>(), 0u);
}

INSTANTIATE_TEST_SUITE_P(SharedTraces, JsonContext,
                         ::testing::Values("nested-svm-6.1/kvmprobe-200.trace.dat", "hip24-vmx/host-2vcpu-6.5.dat",
                                           "nested-svm-6.1/kvmprobe-200.perf.data"));

// --by rip takes the window as report does: the same exits per reason in --from/--to.
TEST(JsonContext, RipWindowMatchesReportWindow) {
  const std::string t = Trace("hip24-vmx/host-2vcpu-6.5.dat");
  json report = RunJson("report --json --from 10 --to 40 " + t);
  json rip = RunJson("report --by rip --json --from 10 --to 40 " + t);
  json whole = RunJson("report --by rip --json " + t);
  ASSERT_FALSE(report.is_discarded());
  ASSERT_FALSE(rip.is_discarded());
  uint64_t report_timed = 0;
  for (const auto& g : report["groups"])
    for (const auto& r : g["reasons"]) report_timed += r["timed_count"].get<uint64_t>();
  EXPECT_EQ(rip["exits"].get<uint64_t>(), report_timed);
  EXPECT_LT(rip["exits"].get<uint64_t>(), whole["exits"].get<uint64_t>());
  EXPECT_EQ(rip["context"]["filters"], report["context"]["filters"]);
}

}  // namespace
