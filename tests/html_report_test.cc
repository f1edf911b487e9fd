// The HTML report's building blocks: ExitBinner (time bins that coarsen without losing an exit,
// latency buckets that hold their values, percentiles equal to the report's) on the real dual-5000
// run and a long synthetic one, and the page writer (self-contained, its data intact even when a
// label holds "</script>").
#include <gtest/gtest.h>

#include "test_util.h"

#include <nlohmann/json.hpp>

#include "analysis/exit_bins.h"
#include "analysis/report_pipeline.h"
#include "decode/exit_reasons.h"
#include "pipeline/input_detector.h"
#include "report/html_page.h"
#include "report/html_sections.h"

namespace exitscope {
namespace {

const std::string kDualDat = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/dual-5000/trace.dat";

TEST(ExitBinsTest, LatencyBucketsHoldTheirValues) {
  const uint64_t values[] = {
      0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 999, 1000, 123456789, (uint64_t{1} << 40) + 12345, UINT64_MAX / 3};
  for (uint64_t v : values) {
    const uint32_t b = ExitBinner::LatencyBucket(v);
    EXPECT_LE(ExitBinner::LatencyBucketLow(b), v) << v;
    EXPECT_LT(v, ExitBinner::LatencyBucketHigh(b)) << v;
    // Four buckets per doubling: a bucket spans at most a quarter of its low bound (past 4 ns).
    if (v >= 8) {
      EXPECT_LE(ExitBinner::LatencyBucketHigh(b) - ExitBinner::LatencyBucketLow(b), ExitBinner::LatencyBucketLow(b) / 4)
          << v;
    }
  }
}

TEST(ExitBinsTest, BinsCoarsenWithoutLosingExits) {
  TraceMeta meta;
  ExitBinner bins(meta);
  bins.SetOrigin(1000);
  ExitSample s;
  s.tid = 7;
  s.isa = Isa::kVmx;
  s.reason = 12;
  s.dur_ns = 500;
  uint64_t n = 0;
  // One exit every 10 ms for 60 s: 6,000 exits over 60,000 ms-bins' worth, far past 512 bins.
  for (uint64_t t = 1000; t < 60'000'000'000ull; t += 10'000'000, ++n) {
    s.ts_ns = t;
    bins.OnExitSample(s);
  }
  EXPECT_LE(bins.bins_used(), ExitBinner::kMaxTimeBins);
  EXPECT_GT(bins.bins_used(), ExitBinner::kMaxTimeBins / 2);
  EXPECT_EQ(bins.bin_ns(), ExitBinner::kFirstBinNs << 7);  // 128 ms: 60 s / 128 ms = 469 bins
  const auto& c = bins.threads().at(7).reasons.at((uint64_t{static_cast<uint8_t>(Isa::kVmx)} << 32) | 12);
  uint64_t sum = 0;
  for (uint32_t b : c.bins) sum += b;
  EXPECT_EQ(sum, n);
  EXPECT_EQ(c.exits, n);
  // Evenly spread exits stay even: every full bin holds 12 or 13 of them.
  for (size_t i = 0; i + 1 < c.bins.size(); ++i) EXPECT_NEAR(c.bins[i], 12.8, 1) << i;
}

TEST(ExitBinsTest, RealTraceBinsEqualTheReport) {
  auto source = OpenKvmEventSource(kDualDat, InputFormat::kAuto, 1);
  ASSERT_TRUE(source.ok());
  ExitBinner bins((*source)->meta());
  ReportTaps taps;
  taps.accepted = {&bins};
  taps.on_start = [&](uint64_t t) { bins.SetOrigin(t); };
  Report r = BuildReport(**source, ReportOptions{}, {}, taps);
  ASSERT_EQ(r.groups.size(), 1u);
  std::map<std::string, uint64_t> binned, timed;
  for (const auto& [tid, t] : bins.threads()) {
    for (const auto& [key, c] : t.reasons) {
      const std::string name = ExitReasonName(static_cast<Isa>(key >> 32), static_cast<uint32_t>(key));
      for (uint32_t b : c.bins) binned[name] += b;
      for (const auto& [bucket, k] : c.latency) timed[name] += k;
    }
  }
  ASSERT_FALSE(r.groups[0].reasons.empty());
  for (const ReasonRow& row : r.groups[0].reasons) {
    EXPECT_EQ(binned[row.name], row.count) << row.name;
    EXPECT_EQ(timed[row.name], row.stats.count) << row.name;
  }
  // The latency section's markers are the report's percentiles.
  HtmlSection lat = LatencySection(bins, r.context.time_unit);
  for (const auto& jr : lat.data["reasons"]) {
    const auto row = std::find_if(r.groups[0].reasons.begin(), r.groups[0].reasons.end(),
                                  [&](const ReasonRow& x) { return x.name == jr["reason"]; });
    ASSERT_NE(row, r.groups[0].reasons.end());
    EXPECT_EQ(jr["p50_ns"].get<uint64_t>(), row->stats.p50_ns) << row->name;
    EXPECT_EQ(jr["p99_ns"].get<uint64_t>(), row->stats.p99_ns) << row->name;
    EXPECT_EQ(jr["p999_ns"].get<uint64_t>(), row->stats.p999_ns) << row->name;
  }
}

TEST(HtmlPageTest, SelfContainedAndDataIntact) {
  HtmlPage page("t <&> \"x\"", "report");
  const std::string evil = "vm <!--<script></script><script>alert(1)</script>";
  page.Add({"one", "context", "First", nlohmann::json{{"label", evil}}, "a note"});
  const std::string html = page.Render();
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_NE(html.find("<title>t &lt;&amp;&gt; &quot;x&quot;</title>"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_NE(html.find("window.exitscopeData"), std::string::npos);  // the script is inline
  const std::string open = "<script type=\"application/json\" id=\"exitscope-data\">";
  const size_t a = html.find(open) + open.size();
  const size_t b = html.find("</script>", a);
  const auto data = nlohmann::json::parse(html.substr(a, b - a));
  EXPECT_EQ(data["schema"], "exitscope.html.report/1");
  EXPECT_EQ(data["sections"][0]["data"]["label"], evil);
  EXPECT_EQ(data["sections"][0]["kind"], "context");
}

TEST(HtmlPageTest, DurationTextsBesideEveryNsField) {
  nlohmann::json j = {
      {"total_ns", 4193000}, {"a", {{"p99_ns", 850}, {"name_ns", "x"}}}, {"list", {{{"exit_ns", 2148000000}}}}};
  AddDurationTexts(&j, TimeUnit::kNs);
  EXPECT_EQ(j["total_ns_text"], "4.193ms");
  EXPECT_EQ(j["a"]["p99_ns_text"], "850ns");
  EXPECT_FALSE(j["a"].contains("name_ns_text"));
  EXPECT_EQ(j["list"][0]["exit_ns_text"], "2.148s");
}

}  // namespace
}  // namespace exitscope
