// The bounded state streaming advise keeps instead of its exits (issue 18): the value histogram is
// exact while its distinct values fit and within its stated precision after, the top-K table is exact
// under its capacity and keeps the heavy keys over it, the burst and short-halt detectors split a
// thread's exits as the rules define, and what advise retains does not grow with the trace's length.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "advise/advisor.h"
#include "advise/bounded_stats.h"
#include "advise/exit_collector.h"
#include "advise/exit_summary.h"

namespace exitscope {
namespace {

uint64_t Kth(std::vector<uint64_t> v, size_t k) {
  std::nth_element(v.begin(), v.begin() + k, v.end());
  return v[k];
}

TEST(ValueHistogram, ExactWhileDistinctValuesFit) {
  std::mt19937_64 rng(18);
  std::vector<uint64_t> all;
  ValueHistogram h(4096);
  for (int i = 0; i < 100000; ++i) {
    uint64_t v = 200 + rng() % 3000;  // ≤ 3000 distinct: under the cap
    if (i % 97 == 0) v = 1'000'000 + rng() % 1000;
    all.push_back(v);
    h.Add(v);
  }
  ASSERT_TRUE(h.exact());
  EXPECT_EQ(h.count(), all.size());
  EXPECT_EQ(h.Median(), Kth(all, all.size() / 2));
  EXPECT_EQ(h.Quantile(0.1), Kth(all, static_cast<size_t>(0.1 * (all.size() - 1))));
  EXPECT_EQ(h.KthSmallest(0), *std::min_element(all.begin(), all.end()));
  EXPECT_EQ(h.KthSmallest(all.size() - 1), *std::max_element(all.begin(), all.end()));
  for (uint64_t c : {0ull, 547ull, 1500ull, 999'999ull}) {
    uint64_t want = 0;
    for (uint64_t v : all) want += v > c ? v - c : 0;
    EXPECT_EQ(h.ExcessOver(c), want) << c;
  }
}

TEST(ValueHistogram, PastItsCapItStaysBoundedWithinItsPrecision) {
  std::mt19937_64 rng(7);
  std::vector<uint64_t> all;
  ValueHistogram h(1024);
  for (int i = 0; i < 200000; ++i) {
    uint64_t v = 100 + rng() % 10'000'000;  // nearly every value distinct
    all.push_back(v);
    h.Add(v);
    ASSERT_LE(h.distinct(), 1024u);
  }
  EXPECT_FALSE(h.exact());
  const double rel = std::ldexp(1.0, -(h.precision_bits() - 1));  // half a bucket, both sides
  for (double q : {0.1, 0.5, 0.9}) {
    const double want = double(Kth(all, static_cast<size_t>(q * (all.size() - 1))));
    EXPECT_NEAR(double(h.Quantile(q)), want, want * rel) << q << " at " << h.precision_bits() << " bits";
  }
}

TEST(TopKTable, ExactUnderItsCapacity) {
  TopKTable<uint64_t, uint64_t> t(64);
  std::map<uint64_t, uint64_t> truth;
  std::mt19937_64 rng(3);
  for (int i = 0; i < 10000; ++i) {
    uint64_t k = rng() % 64;
    ++t.At(k, [](uint64_t w) { return w; });
    ++truth[k];
  }
  ASSERT_TRUE(t.exact());
  ASSERT_EQ(t.size(), truth.size());
  for (const auto& [k, n] : truth) EXPECT_EQ(t.entries().at(k), n);
}

TEST(TopKTable, OverItsCapacityKeepsTheHeavyKeys) {
  TopKTable<uint64_t, uint64_t> t(64);
  auto w = [](uint64_t v) { return v; };
  std::map<uint64_t, uint64_t> truth;
  for (uint64_t i = 0; i < 20000; ++i) {
    uint64_t k = i % 4 == 0 ? i % 3 : 1000 + i;  // 3 heavy keys among 15000 seen once
    ++t.At(k, w);
    ++truth[k];
    ASSERT_LE(t.size(), 64u);
  }
  EXPECT_FALSE(t.exact());
  EXPECT_LE(t.dropped_max_weight(), 1u);  // only keys seen once were dropped
  for (uint64_t k = 0; k < 3; ++k) EXPECT_EQ(t.entries().at(k), truth[k]);
}

// A key dropped by an eviction comes back as a new entry, not through the recent-keys memo of At:
// the memo is emptied with the entries it pointed at.
TEST(TopKTable, EvictedKeysComeBackAsNewEntries) {
  TopKTable<uint64_t, uint64_t> t(4);
  auto w = [](uint64_t v) { return v; };
  for (uint64_t k = 0; k < 4; ++k) t.At(k, w) += 10 + k;
  ++t.At(0, w);         // key 0, the lightest but one, now in the memo
  t.At(100, w) = 1000;  // full: the lighter half (0 and 1) goes
  EXPECT_FALSE(t.exact());
  EXPECT_EQ(t.entries().count(0), 0u);
  EXPECT_EQ(t.At(0, w), 0u) << "key 0 must start again at 0";
  EXPECT_EQ(t.entries().at(2), 12u);
  EXPECT_EQ(t.entries().at(100), 1000u);
}

AdvisedExit At(int32_t tid, uint64_t ts_ns, uint64_t dur_ns, ExitClass c = ExitClass::kDr) {
  AdvisedExit e;
  e.tid = tid;
  e.ts_ns = ts_ns;
  e.dur_ns = e.handling_ns = dur_ns;
  e.exit_class = c;
  return e;
}

// Two threads interleaved: bursts are per thread, broken by an unmatched exit of that thread and by a
// gap longer than the window after the previous exit's end.
TEST(BurstDetector, SplitsEachThreadsRunsByTheWindow) {
  SummarySpec spec{.burst_gap_ns = 100};
  MatchedExits m(&spec);
  uint64_t t = 1000;
  auto obs = [&](int32_t tid, uint64_t ts, bool matched) { m.Observe(At(tid, ts, 10), tid, matched); };
  obs(0, t, true);         // thread 0: burst A …
  obs(1, t + 5, true);     // thread 1: burst B …
  obs(0, t + 110, true);   // A: starts 100 after A's end (1010): joins
  obs(1, t + 200, true);   // B: 185 after its end: a new burst C
  obs(0, t + 221, true);   // A: 101 after its end (1120): new burst D
  obs(0, t + 240, false);  // unmatched: closes D
  obs(0, t + 260, true);   // E, though within the window of D's end
  m.Finish();
  EXPECT_EQ(m.bursts, 5u);
  EXPECT_EQ(m.longest_burst, 2u);
  EXPECT_EQ(m.burst_lengths, (std::map<uint64_t, uint64_t>{{1, 4}, {2, 1}}));
  EXPECT_EQ(m.size(), 6u);
}

// An untimed HLT is short when its thread's next exit (any) comes within the window; timed ones by
// their own sleep. HLTs right after a matched exit of their thread are counted for the MSR evidence.
TEST(BurstDetector, ShortHaltsAndHltsAfter) {
  SummarySpec spec{.hlts_after = true, .short_halt_ns = 1000};
  MatchedExits m(&spec);
  AdvisedExit untimed = At(0, 0, 0, ExitClass::kHlt);
  untimed.timed = false;
  m.Observe(untimed, 0, true);
  m.Observe(At(0, 900, 50, ExitClass::kCpuid), 0, false);  // bounds the untimed halt: short
  untimed.ts_ns = 2000;
  m.Observe(untimed, 0, true);
  m.Observe(At(0, 3500, 50, ExitClass::kCpuid), 0, false);  // 1500 later: not short
  m.Observe(At(1, 10, 400, ExitClass::kHlt), 1, true);      // timed, short
  m.Observe(At(1, 1000, 5000, ExitClass::kHlt), 1, true);   // timed, long; right after a matched exit
  m.Finish();
  EXPECT_EQ(m.halts.bounded, 2u);
  EXPECT_EQ(m.halts.timed_shorts, 1u);
  EXPECT_EQ(m.halts.shorts, 2u);
  EXPECT_EQ(m.halts.dur.Median(), 5000u);
  // Only thread 1's second HLT follows a matched exit (its first HLT); thread 0's follows a CPUID.
  EXPECT_EQ(m.hlts_after, 1u);
}

// A synthetic trace fed through the collector as kvm events, the pattern repeated `rounds` times on
// four threads: DR bursts, x2APIC ICR writes with kvm_msr, port writes, HLTs.
ExitProfile Collect(int rounds, bool distinct_durations) {
  TraceMeta meta;
  Diagnostics diag;
  ExitCollector c(&meta, &diag);
  uint64_t now = 1'000'000;
  uint64_t n = 0;
  auto exit = [&](int32_t tid, uint32_t reason, uint64_t dur, uint64_t rip, std::vector<KvmEvent> detail = {}) {
    if (distinct_durations) dur += n % 100000;
    ++n;
    KvmEvent x;
    x.ts_ns = now;
    x.tid = tid;
    x.kind = EventKind::kExit;
    x.isa = Isa::kVmx;
    x.reason = reason;
    x.rip = rip;
    c.Add(x);
    for (auto d : detail) {
      d.ts_ns = now + dur / 2;
      d.tid = tid;
      c.Add(d);
    }
    KvmEvent en = x;
    en.kind = EventKind::kEntry;
    en.ts_ns = now + dur;
    c.Add(en);
    now += dur + 700;
  };
  KvmEvent icr;
  icr.kind = EventKind::kMsr;
  icr.info1 = 0x830;
  icr.write = true;
  KvmEvent pio;
  pio.kind = EventKind::kPio;
  pio.info1 = 0xcf8;
  pio.write = true;
  for (int i = 0; i < rounds; ++i) {
    const int32_t tid = 100 + i % 4;
    const uint64_t rip = 0xffffffff81000000ull + (i % 50) * 16;
    for (int k = 0; k < 3; ++k) exit(tid, kVmxDrAccess, 900 + (i * 7 + k) % 500, rip);
    exit(tid, kVmxMsrWrite, 1200 + i % 300, rip + 4, {icr});
    exit(tid, kVmxIoInstruction, 4000 + i % 200, rip + 8, {pio});
    exit(tid, kVmxHlt, 150000 + (i % 400) * 100, rip + 12);
  }
  return c.Finish();
}

TEST(AdviseMemory, RetainedStateDoesNotGrowWithTheTrace) {
  ExitProfile small = Collect(2000, false), large = Collect(20000, false);
  ASSERT_EQ(large.exits, 10 * small.exits);
  EXPECT_EQ(large.RetainedEntries(), small.RetainedEntries());
  // The same findings, scaled: the rules see the same pattern ten times more often.
  Advice a = RunAdvisor(small, GuestSymbolizer()), b = RunAdvisor(large, GuestSymbolizer());
  ASSERT_EQ(a.findings.size(), b.findings.size());
  for (size_t i = 0; i < a.findings.size(); ++i) {
    EXPECT_EQ(a.findings[i].id, b.findings[i].id);
    EXPECT_EQ(10 * a.findings[i].exits, b.findings[i].exits);
  }
}

// Worst case: almost every handling time distinct. The histograms coarsen instead of growing.
TEST(AdviseMemory, DistinctDurationsStayWithinTheCaps) {
  ExitProfile small = Collect(20000, true), large = Collect(80000, true);
  ASSERT_EQ(large.exits, 4 * small.exits);
  EXPECT_LE(large.RetainedEntries(), small.RetainedEntries() * 3 / 2);
  EXPECT_LE(large.in_kernel.distinct(), ValueHistogram::kDefaultCap);
  EXPECT_FALSE(large.in_kernel.exact());
}

}  // namespace
}  // namespace exitscope
