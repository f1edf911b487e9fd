#include "analysis/exit_pairer.h"

#include <gtest/gtest.h>

#include "test_util.h"

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

namespace exitscope {
namespace {

struct Collect : ExitSampleSink {
  std::vector<ExitSample> samples;
  std::vector<ExitSample> untimed;
  void OnExitSample(const ExitSample& s) override { samples.push_back(s); }
  void OnUntimedExit(const ExitSample& s) override { untimed.push_back(s); }
};

KvmEvent Ev(EventKind kind, uint64_t ts, int cpu, int tid, uint32_t reason = 0) {
  return testing::MakeKvmEvent(kind, ts, cpu, tid, reason, Isa::kSvm);
}

TEST(ExitPairerTest, PairsExitWithNextEntryOfSameThreadAndKeepsDetails) {
  TraceMeta meta;
  Diagnostics d;
  Collect sink;
  ExitPairer p(meta, &d, &sink);
  p.OnEvent(Ev(EventKind::kEntry, 100, 0, 7));   // first entry: no exit before it
  p.OnEvent(Ev(EventKind::kExit, 200, 0, 7, 0x7c));
  p.OnEvent(Ev(EventKind::kExit, 210, 1, 8, 0x78));  // another vCPU interleaves
  KvmEvent msr = Ev(EventKind::kMsr, 220, 0, 7);
  msr.info1 = 0x1b;
  msr.write = true;
  p.OnEvent(msr);
  KvmEvent us = Ev(EventKind::kUserspaceExit, 230, 1, 8, 5);  // KVM_EXIT_HLT
  p.OnEvent(us);
  p.OnEvent(Ev(EventKind::kEntry, 260, 0, 7));
  p.OnEvent(Ev(EventKind::kEntry, 400, 1, 8));
  p.Finish();
  ASSERT_EQ(sink.samples.size(), 2u);
  EXPECT_EQ(sink.samples[0].tid, 7);
  EXPECT_EQ(sink.samples[0].dur_ns, 60u);
  ASSERT_EQ(sink.samples[0].detail_count, 1);
  EXPECT_EQ(sink.samples[0].details[0].key, 0x1bu);
  EXPECT_TRUE(sink.samples[0].details[0].write);
  EXPECT_FALSE(sink.samples[0].to_userspace);
  EXPECT_EQ(sink.samples[1].dur_ns, 190u);
  EXPECT_TRUE(sink.samples[1].to_userspace);
  EXPECT_EQ(sink.samples[1].userspace_reason, 5u);
  EXPECT_EQ(d.Count(kPairFirstEntryWithoutExit), 1u);
  EXPECT_EQ(d.Count(kPairExitBeforeFirstEntry), 1u);  // tid 8's exit preceded any entry of tid 8
  EXPECT_FALSE(d.HasDataLoss());
}

TEST(ExitPairerTest, CountsLostEntryMigrationAndFinalExit) {
  TraceMeta meta;
  Diagnostics d;
  Collect sink;
  ExitPairer p(meta, &d, &sink);
  p.OnEvent(Ev(EventKind::kEntry, 10, 0, 1));
  p.OnEvent(Ev(EventKind::kExit, 20, 0, 1));
  p.OnEvent(Ev(EventKind::kExit, 30, 0, 1));   // the entry between was lost
  p.OnEvent(Ev(EventKind::kEntry, 45, 1, 1));  // migrated CPU 0 -> 1: still timed
  p.OnEvent(Ev(EventKind::kEntry, 50, 1, 1));  // entry without exit
  p.OnEvent(Ev(EventKind::kExit, 60, 1, 1));   // trace ends here
  p.Finish();
  ASSERT_EQ(sink.samples.size(), 1u);
  EXPECT_EQ(sink.samples[0].ts_ns, 30u);
  EXPECT_EQ(sink.samples[0].dur_ns, 15u);
  EXPECT_EQ(sink.samples[0].exit_cpu, 0);
  EXPECT_EQ(sink.samples[0].entry_cpu, 1);
  EXPECT_EQ(d.Count(kPairLostEntry), 1u);
  EXPECT_EQ(d.Count(kPairCpuMigration), 1u);
  EXPECT_EQ(d.Count(kPairEntryWithoutExit), 1u);
  EXPECT_EQ(d.Count(kPairFinalExit), 1u);
  EXPECT_TRUE(d.HasDataLoss());
  EXPECT_EQ(p.counts().exits, 3u);
  EXPECT_EQ(p.counts().entries, 3u);
  // Every exit is accounted for: one timed, the lost-entry one and the final one untimed.
  ASSERT_EQ(sink.untimed.size(), 2u);
  EXPECT_EQ(sink.untimed[0].ts_ns, 20u);
  EXPECT_EQ(sink.untimed[1].ts_ns, 60u);
}

TEST(ExitPairerTest, LostMarkerDropsOpenExitsAndTheirOrphanEntry) {
  TraceMeta meta;
  Diagnostics d;
  Collect sink;
  ExitPairer p(meta, &d, &sink);
  p.OnEvent(Ev(EventKind::kEntry, 10, 0, 1));
  p.OnEvent(Ev(EventKind::kExit, 20, 0, 1));
  p.OnLost(LostEvents{0, 40, 3});
  p.OnEvent(Ev(EventKind::kEntry, 90, 0, 1));  // may belong to a lost exit: not timed, not recounted
  p.Finish();
  EXPECT_TRUE(sink.samples.empty());
  ASSERT_EQ(sink.untimed.size(), 1u);  // still counted by reason
  EXPECT_EQ(sink.untimed[0].ts_ns, 20u);
  EXPECT_EQ(d.Count(kPairDroppedByLoss), 1u);
  EXPECT_EQ(d.Count(kPairEntryWithoutExit), 0u);
}

TEST(ExitPairerTest, DoesNotTimeExitsBeforeLatestCpuStartOfOverwrittenBuffer) {
  TraceMeta meta;
  meta.buffer_overwritten = true;
  meta.cpu_first_ts_ns = {{0, 100}, {1, 500}};
  Diagnostics d;
  Collect sink;
  ExitPairer p(meta, &d, &sink);
  p.OnEvent(Ev(EventKind::kExit, 200, 0, 1));   // before CPU 1's start: its entry may be lost
  p.OnEvent(Ev(EventKind::kEntry, 900, 1, 1));
  p.OnEvent(Ev(EventKind::kExit, 1000, 1, 1));
  p.OnEvent(Ev(EventKind::kEntry, 1100, 1, 1));
  p.Finish();
  ASSERT_EQ(sink.samples.size(), 1u);
  EXPECT_EQ(sink.samples[0].dur_ns, 100u);
  ASSERT_EQ(sink.untimed.size(), 1u);  // counted, not timed
  EXPECT_EQ(sink.untimed[0].ts_ns, 200u);
  EXPECT_EQ(d.Count(kPairBeforeBufferStart), 1u);
  EXPECT_EQ(d.Count(kPairEntryWithoutExit), 0u);
  EXPECT_EQ(d.Count(kPairFirstEntryWithoutExit), 0u);
}

// Seeded stress test: interleaved multi-vCPU streams on several CPUs, with migrations between exit
// and entry and per-CPU loss windows, against a reconstruction from the generator's ground truth.
// Recorded with -e kvm:kvm_exit only: every exit is counted untimed, nothing is data loss.
TEST(ExitPairerTest, TraceWithoutEntriesCountsExitsUntimedAsInfo) {
  TraceMeta meta;
  Diagnostics d;
  Collect sink;
  ExitPairer p(meta, &d, &sink);
  for (int i = 0; i < 5; ++i) p.OnEvent(Ev(EventKind::kExit, 10 + i, i % 2, 1 + i % 2, 0x78 + i));
  p.Finish();
  EXPECT_TRUE(sink.samples.empty());
  ASSERT_EQ(sink.untimed.size(), 5u);
  std::multiset<uint32_t> reasons;
  for (const auto& s : sink.untimed) {
    reasons.insert(s.reason);
    EXPECT_EQ(s.dur_ns, 0u);
  }
  EXPECT_EQ(reasons, (std::multiset<uint32_t>{0x78, 0x79, 0x7a, 0x7b, 0x7c}));
  EXPECT_EQ(p.counts().untimed, 5u);
  EXPECT_EQ(d.Count(kPairEntryNotRecorded), 5u);
  EXPECT_EQ(d.Count(kPairLostEntry), 0u);
  EXPECT_EQ(d.Count(kPairFinalExit), 0u);
  EXPECT_EQ(d.Count(kPairExitBeforeFirstEntry), 0u);
  EXPECT_FALSE(d.HasDataLoss());
}

// Exit after exit before the trace's first entry: once an entry shows up, entries were recorded, so
// those exits did lose theirs (data loss), and they are still counted untimed.
TEST(ExitPairerTest, LostEntriesBeforeTheFirstEntryAreReportedOnceEntriesAppear) {
  TraceMeta meta;
  Diagnostics d;
  Collect sink;
  ExitPairer p(meta, &d, &sink);
  p.OnEvent(Ev(EventKind::kExit, 10, 0, 1, 0x78));
  p.OnEvent(Ev(EventKind::kExit, 20, 0, 1, 0x7c));  // the entry of the first exit was lost
  p.OnEvent(Ev(EventKind::kEntry, 30, 0, 1));
  p.Finish();
  ASSERT_EQ(sink.samples.size(), 1u);
  EXPECT_EQ(sink.samples[0].reason, 0x7cu);
  ASSERT_EQ(sink.untimed.size(), 1u);
  EXPECT_EQ(sink.untimed[0].reason, 0x78u);
  EXPECT_EQ(d.Count(kPairLostEntry), 1u);
  EXPECT_EQ(d.Count(kPairExitBeforeFirstEntry), 2u);
  EXPECT_EQ(d.Count(kPairEntryNotRecorded), 0u);
  EXPECT_TRUE(d.HasDataLoss());
}

TEST(ExitPairerTest, RandomInterleavedStreamsMatchGroundTruth) {
  uint64_t markers_total = 0, dropped_total = 0;
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    std::mt19937_64 rng(seed);
    const int kCpus = 4, kThreads = 6;
    struct Truth {
      int tid;
      uint64_t exit_ts, entry_ts;
      int exit_cpu, entry_cpu;
      bool has_entry;
    };
    struct Gen {
      KvmEvent e;
      size_t pair;
    };
    // Loss windows per CPU, decided first so that migrations can avoid them (see below).
    std::vector<std::pair<uint64_t, uint64_t>> loss[kCpus];
    for (int c = 0; c < kCpus; ++c) {
      int n = static_cast<int>(rng() % 3);
      for (int i = 0; i < n; ++i) {
        uint64_t a = rng() % 900000 + 50000;
        loss[c].push_back({a, a + rng() % 20000 + 1000});
      }
    }
    auto in_loss = [&](int cpu, uint64_t ts) {
      for (auto [a, b] : loss[cpu])
        if (ts >= a && ts < b) return true;
      return false;
    };
    auto near_any_loss = [&](uint64_t t0, uint64_t t1) {
      for (int c = 0; c < kCpus; ++c)
        for (auto [a, b] : loss[c])
          if (t1 >= a && t0 < b + 30000) return true;
      return false;
    };
    std::vector<Truth> truth;
    std::vector<Gen> events;
    for (int t = 0; t < kThreads; ++t) {
      int tid = 100 + t;
      int cpu = static_cast<int>(rng() % kCpus);
      uint64_t ts = rng() % 1000;
      while (ts < 1000000) {
        uint64_t exit_ts = ts, dur = rng() % 5000 + 1;
        uint64_t entry_ts = exit_ts + dur;
        int entry_cpu = cpu;
        // A thread migrates only while it is in the host, and never near a loss window: a loss on a
        // CPU the thread passed through could hide an entry/exit pair before any marker is delivered.
        if (rng() % 5 == 0 && !near_any_loss(exit_ts, entry_ts)) entry_cpu = static_cast<int>(rng() % kCpus);
        bool last = entry_ts >= 1000000;
        truth.push_back({tid, exit_ts, entry_ts, cpu, entry_cpu, !last});
        KvmEvent ex = Ev(EventKind::kExit, exit_ts * 4 + t % 4, cpu, tid, 0x78);
        events.push_back({ex, truth.size() - 1});
        if (!last) events.push_back({Ev(EventKind::kEntry, entry_ts * 4 + t % 4, entry_cpu, tid), truth.size() - 1});
        cpu = entry_cpu;
        ts = entry_ts + rng() % 3000 + 1;
      }
    }
    // Time-stamps were scaled by 4 plus the thread index mod 4 so no two events tie.
    std::sort(events.begin(), events.end(), [](const Gen& a, const Gen& b) { return a.e.ts_ns < b.e.ts_ns; });
    // Drop events inside loss windows; the first surviving event after a window carries the marker.
    std::vector<bool> pending_marker(kCpus, false);
    std::vector<std::pair<Gen, bool>> stream;  // event, carries marker
    std::vector<uint64_t> marker_ts;
    std::set<std::pair<size_t, int>> dropped;  // (pair, kind)
    for (const auto& g : events) {
      int c = g.e.cpu;
      if (in_loss(c, g.e.ts_ns / 4)) {
        pending_marker[c] = true;
        dropped.insert({g.pair, static_cast<int>(g.e.kind)});
        continue;
      }
      stream.push_back({g, pending_marker[c]});
      if (pending_marker[c]) marker_ts.push_back(g.e.ts_ns);
      pending_marker[c] = false;
    }
    TraceMeta meta;
    Diagnostics d;
    Collect sink;
    ExitPairer p(meta, &d, &sink);
    for (const auto& [g, marker] : stream) {
      if (marker) p.OnLost(LostEvents{g.e.cpu, g.e.ts_ns, 0});
      p.OnEvent(g.e);
    }
    p.Finish();

    // Reconstruction: a true pair is timed iff both its events survived and no marker arrived
    // between its exit and (including) its entry.
    std::set<std::tuple<int, uint64_t, uint64_t>> want;
    uint64_t want_migrations = 0, want_final = 0;
    for (size_t i = 0; i < truth.size(); ++i) {
      const Truth& tr = truth[i];
      bool exit_ok = !dropped.count({i, static_cast<int>(EventKind::kExit)});
      bool entry_ok = tr.has_entry && !dropped.count({i, static_cast<int>(EventKind::kEntry)});
      uint64_t te = tr.exit_ts * 4 + (tr.tid - 100) % 4, tn = tr.entry_ts * 4 + (tr.tid - 100) % 4;
      if (exit_ok && !tr.has_entry) {
        bool marker_after = std::any_of(marker_ts.begin(), marker_ts.end(), [&](uint64_t m) { return m > te; });
        if (!marker_after) ++want_final;
      }
      if (!exit_ok || !entry_ok) continue;
      bool marker = std::any_of(marker_ts.begin(), marker_ts.end(), [&](uint64_t m) { return m > te && m <= tn; });
      if (marker) continue;
      want.insert({tr.tid, te, tn - te});
      if (tr.exit_cpu != tr.entry_cpu) ++want_migrations;
    }
    std::set<std::tuple<int, uint64_t, uint64_t>> got;
    for (const auto& s : sink.samples) got.insert({s.tid, s.ts_ns, s.dur_ns});
    ASSERT_EQ(got.size(), sink.samples.size()) << "seed " << seed;
    EXPECT_EQ(got, want) << "seed " << seed;
    EXPECT_EQ(d.Count(kPairCpuMigration), want_migrations) << "seed " << seed;
    EXPECT_EQ(d.Count(kPairFinalExit), want_final) << "seed " << seed;
    EXPECT_EQ(p.counts().exits + p.counts().entries, stream.size()) << "seed " << seed;
    EXPECT_EQ(d.Count(kPairEntryWithoutExit), 0u) << "seed " << seed;  // every orphan follows a marker
    EXPECT_GT(want.size(), 100u);
    markers_total += marker_ts.size();
    dropped_total += d.Count(kPairDroppedByLoss);
  }
  EXPECT_GT(markers_total, 10u);  // the generator really exercised loss
  EXPECT_GT(dropped_total, 0u);
}

}  // namespace
}  // namespace exitscope
