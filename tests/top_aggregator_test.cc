// `top`'s per-interval aggregation on a real recording: the kvmprobe-200 trace (real AMD SVM KVM host)
// read by the project's reader, every event shown to the aggregator and to the project's pairer, as
// one top interval. Exits count at their kvm_exit, as `exitscope report` counts them; the timed ones
// are those `perf kvm stat report` printed for the same workload (README of the trace: msr 600, npf
// 401, io 400, read_dr7 201, read_cr4/write_cr4/cpuid/hypercall 200, hlt 199): the trace ends
// inside its last HLT exit, which has no entry.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "analysis/exit_pairer.h"
#include "analysis/top_aggregator.h"
#include "report/top_reporter.h"
#include "model/event_source.h"
#include "pipeline/input_detector.h"

namespace exitscope {
namespace {

TEST(TopAggregator, RealTraceOneIntervalMatchesPerfKvmStat) {
  auto src = OpenKvmEventSource(std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat");
  ASSERT_TRUE(src.ok()) << src.error().message;
  TopAggregator agg;
  Diagnostics diag;
  ExitPairer pairer((*src)->meta(), &diag, &agg);
  KvmEvent e;
  LostEvents lost;
  while ((*src)->Next(&e, &lost)) {
    if (lost.cpu >= 0) pairer.OnLost(lost);
    agg.OnKvmEvent(e);
    pairer.OnEvent(e);
  }
  TopInterval t = agg.TakeInterval(2.0, {0, 0}, 0);
  std::map<std::string, uint64_t> by_reason, timed;
  for (const auto& r : t.reasons) by_reason[r.label] = r.exits, timed[r.label] = r.timed;
  EXPECT_EQ(by_reason["msr"], 600u);
  EXPECT_EQ(by_reason["npf"], 401u);
  EXPECT_EQ(by_reason["io"], 400u);
  EXPECT_EQ(by_reason["cpuid"], 200u);
  EXPECT_EQ(by_reason["vmmcall"] + by_reason["hypercall"], 200u);
  EXPECT_EQ(by_reason["hlt"], 200u);  // report's COUNT: the last one still open when the trace ended
  EXPECT_EQ(timed["hlt"], 199u);      // perf kvm stat's: it counts pairs
  EXPECT_EQ(timed["msr"], 600u);
  EXPECT_EQ(t.exits, 2610u);  // every kvm_exit of the trace (report: kvm_exit 2,610)
  // Sorted by count, the busiest reason first; rates are per interval second.
  ASSERT_FALSE(t.reasons.empty());
  EXPECT_EQ(t.reasons[0].label, "msr");
  EXPECT_DOUBLE_EQ(t.reasons[0].exits_per_s, 300.0);
  EXPECT_LE(t.reasons[0].p50_ns, t.reasons[0].p99_ns);
  EXPECT_LE(t.reasons[0].p99_ns, t.reasons[0].max_ns);
  // One vCPU thread; its exits are all the exits.
  ASSERT_EQ(t.vcpus.size(), 1u);
  EXPECT_EQ(t.vcpus[0].exits, t.exits);
  // JSON lines carry the schema and the same numbers.
  auto j = nlohmann::json::parse(RenderTopJson(t));
  EXPECT_EQ(j["schema"], "exitscope.top/1");
  EXPECT_EQ(j["schema_version"], kTopSchemaVersion);
  EXPECT_EQ(j["exits"], t.exits);
  EXPECT_EQ(j["reasons"][0]["reason"], "msr");
  // The next interval starts empty.
  EXPECT_EQ(agg.TakeInterval(1.0, {}, 0).exits, 0u);
}

TEST(TopAggregator, ReasonFilterKeepsOnlyThatReason) {
  auto src = OpenKvmEventSource(std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat");
  ASSERT_TRUE(src.ok());
  TopAggregator agg("hlt");
  Diagnostics diag;
  ExitPairer pairer((*src)->meta(), &diag, &agg);
  KvmEvent e;
  while ((*src)->Next(&e, nullptr)) {
    agg.OnKvmEvent(e);
    pairer.OnEvent(e);
  }
  TopInterval t = agg.TakeInterval(1.0, {}, 0);
  ASSERT_EQ(t.reasons.size(), 1u);
  EXPECT_EQ(t.reasons[0].label, "hlt");
  EXPECT_EQ(t.exits, 200u);
  EXPECT_EQ(t.reasons[0].timed, 199u);
  std::string text = RenderTopText(t);
  EXPECT_NE(text.find("hlt"), std::string::npos);
  EXPECT_NE(text.find("lost events:"), std::string::npos);
}

// An exit still being handled when the interval ends counts in it at once, with no time: its row
// says so ("timed" 0, times unknown: "-" in text, null in JSON), never a made-up 0 ns. Its time comes
// in the interval its entry does.
TEST(TopAggregator, ExitInFlightCountsNowIsTimedWhenItEnds) {
  TopAggregator agg;
  Diagnostics diag;
  TraceMeta meta;
  ExitPairer pairer(meta, &diag, &agg);
  KvmEvent x;
  x.kind = EventKind::kExit;
  x.isa = Isa::kVmx;
  x.reason = 12;  // HLT
  x.tid = 4242;
  x.cpu = 0;
  x.ts_ns = 1000;
  agg.OnKvmEvent(x);
  pairer.OnEvent(x);
  TopInterval first = agg.TakeInterval(1.0, {0}, 0);
  ASSERT_EQ(first.reasons.size(), 1u);
  EXPECT_EQ(first.exits, 1u);
  EXPECT_EQ(first.reasons[0].exits, 1u);
  EXPECT_EQ(first.reasons[0].timed, 0u);
  auto j = nlohmann::json::parse(RenderTopJson(first));
  EXPECT_EQ(j["reasons"][0]["exits"], 1);
  EXPECT_EQ(j["reasons"][0]["timed"], 0);
  EXPECT_TRUE(j["reasons"][0]["p50_ns"].is_null());
  EXPECT_TRUE(j["reasons"][0]["max_ns"].is_null());
  EXPECT_TRUE(j["vms"][0]["p99_ns"].is_null());
  const std::string text = RenderTopText(first);
  EXPECT_EQ(text.find("0ns"), std::string::npos) << text;
  KvmEvent n = x;
  n.kind = EventKind::kEntry;
  n.ts_ns = 5000;
  agg.OnKvmEvent(n);
  pairer.OnEvent(n);
  TopInterval second = agg.TakeInterval(1.0, {0}, 0);
  ASSERT_EQ(second.reasons.size(), 1u);
  EXPECT_EQ(second.exits, 0u);  // counted in the first interval already
  EXPECT_EQ(second.reasons[0].timed, 1u);
  EXPECT_EQ(second.reasons[0].max_ns, 4000u);
}

}  // namespace
}  // namespace exitscope
