// Advisor rules on synthetic exit streams fed through the collector as KvmEvents (the same path a
// real trace takes): each pattern is recognised with the saving its rule promises, and a stream
// without the pattern is not flagged.
#include <gtest/gtest.h>

#include "advise/advice_reporter.h"
#include "advise/advisor.h"
#include "advise/exit_collector.h"

namespace exitscope {
namespace {

class Stream {
 public:
  Stream() : collector_(&meta_, &diag_) {}
  // One exit on thread tid lasting dur_ns, with optional detail events in between; returns its end.
  Stream& Exit(int32_t tid, Isa isa, uint32_t reason, uint64_t dur_ns, uint64_t rip = 0xffffffff81000010,
               std::vector<KvmEvent> detail = {}, uint64_t info1 = 0) {
    KvmEvent x;
    x.ts_ns = now_;
    x.tid = tid;
    x.cpu = 0;
    x.kind = EventKind::kExit;
    x.isa = isa;
    x.reason = reason;
    x.rip = rip;
    x.info1 = info1;
    collector_.Add(x);
    for (auto d : detail) {
      d.ts_ns = now_ + dur_ns / 2;
      d.tid = tid;
      collector_.Add(d);
    }
    KvmEvent n = x;
    n.kind = EventKind::kEntry;
    n.ts_ns = now_ + dur_ns;
    collector_.Add(n);
    now_ += dur_ns + gap_ns_;
    return *this;
  }
  Stream& Gap(uint64_t ns) {
    now_ += ns;
    return *this;
  }
  Advice Run() {
    profile_ = collector_.Finish();
    return RunAdvisor(profile_, GuestSymbolizer());
  }

 private:
  TraceMeta meta_;
  Diagnostics diag_;
  ExitCollector collector_;
  ExitProfile profile_;
  uint64_t now_ = 1000000;
  uint64_t gap_ns_ = 2000;
};

const Finding* Find(const Advice& a, std::string_view id) {
  for (const auto& f : a.findings) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

KvmEvent Ev(EventKind k, uint64_t info1 = 0, bool write = false, uint32_t reason = 0) {
  KvmEvent e;
  e.kind = k;
  e.info1 = info1;
  e.write = write;
  e.reason = reason;
  return e;
}

TEST(AdviseRules, DrBurstsAreFlaggedAndPricedAsAllButTheFirst) {
  Stream s;
  for (int i = 0; i < 40; ++i) {
    for (int k = 0; k < 4; ++k) s.Exit(100, Isa::kVmx, kVmxDrAccess, 1000);
    s.Exit(100, Isa::kVmx, kVmxCpuid, 500).Gap(50000);
  }
  Advice a = s.Run();
  const Finding* f = Find(a, "dr-burst");
  ASSERT_NE(f, nullptr) << RenderAdviceText(a, "synthetic");
  EXPECT_EQ(f->exits, 160u);
  EXPECT_EQ(f->pricing.saving_ns, 40u * 3 * 1000);
  EXPECT_EQ(f->pricing.confidence, Confidence::kHigh);
}

TEST(AdviseRules, LazyDrSwitchingIsNotFlagged) {
  Stream s;  // one DR exit per iteration, as KVM with lazy switching produces (nested-svm fixture)
  for (int i = 0; i < 200; ++i) {
    s.Exit(100, Isa::kSvm, kSvmReadDr0 + 7, 1000).Exit(100, Isa::kSvm, kSvmCpuid, 500);
  }
  Advice a = s.Run();
  EXPECT_EQ(Find(a, "dr-burst"), nullptr);
  bool listed = false;
  for (const auto& nf : a.not_flagged) listed |= nf.id == "dr-burst" && nf.reason.find("lazily") != std::string::npos;
  EXPECT_TRUE(listed) << RenderAdviceText(a, "synthetic");
}

TEST(AdviseRules, DoorbellThroughTheVmmIsPricedAgainstAnInKernelExit) {
  Stream s;
  for (int i = 0; i < 100; ++i) {
    s.Exit(7, Isa::kSvm, kSvmNpf, 30000, 0x1040,
           {Ev(EventKind::kMmio, 0xd0000000, true), Ev(EventKind::kUserspaceExit, 0, false, 6)});
    s.Exit(7, Isa::kSvm, kSvmCpuid, 1000);
  }
  Advice a = s.Run();
  const Finding* f = Find(a, "vmm-doorbell");
  ASSERT_NE(f, nullptr) << RenderAdviceText(a, "synthetic");
  EXPECT_EQ(f->pricing.saving_ns, 100u * (30000 - 1000));
  EXPECT_EQ(f->evidence[4].value, "MMIO 0xd0000000 ×100 (3.00 ms)");
  EXPECT_EQ(Find(a, "ept-fault"), nullptr);  // SVM MMIO arrives as NPF but is not a fault storm
  EXPECT_EQ(a.vmm_exits, 100u);
}

TEST(AdviseRules, IpiAndTimerFromApicWriteOffsetsAndMsrs) {
  Stream s;
  for (int i = 0; i < 60; ++i) {
    s.Exit(1, Isa::kVmx, kVmxApicWrite, 3000, 0xffffffff81000010, {}, 0x300);
    s.Exit(1, Isa::kVmx, kVmxMsrWrite, 2000, 0xffffffff81000020, {Ev(EventKind::kMsr, 0x6e0, true)});
    s.Gap(100000);
  }
  Advice a = s.Run();
  ASSERT_NE(Find(a, "ipi"), nullptr) << RenderAdviceText(a, "synthetic");
  EXPECT_EQ(Find(a, "ipi")->exits, 60u);
  ASSERT_NE(Find(a, "timer"), nullptr);
  EXPECT_EQ(Find(a, "timer")->time_ns, 60u * 2000);
  EXPECT_EQ(Find(a, "msr"), nullptr);  // TSC_DEADLINE belongs to the timer rule only
}

TEST(AdviseRules, ShortHaltsWantPollingLongOnesDoNot) {
  Stream shorts, longs;
  for (int i = 0; i < 100; ++i) {
    shorts.Exit(3, Isa::kVmx, kVmxHlt, 50000).Exit(3, Isa::kVmx, kVmxCpuid, 800);
    longs.Exit(3, Isa::kVmx, kVmxHlt, 5000000).Exit(3, Isa::kVmx, kVmxCpuid, 800);
  }
  Advice a = shorts.Run();
  const Finding* f = Find(a, "halt-poll");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->pricing.saving_ns, 100u * 800);
  EXPECT_EQ(Find(longs.Run(), "halt-poll"), nullptr);
}

TEST(AdviseRules, CpuidLoopFlagsNothing) {
  Stream s;
  for (int i = 0; i < 500; ++i) s.Exit(3, Isa::kVmx, kVmxCpuid, 800);
  Advice a = s.Run();
  EXPECT_TRUE(a.findings.empty()) << RenderAdviceText(a, "synthetic");
  EXPECT_EQ(a.not_flagged.size(), AdviseRules().size());
  auto j = RenderAdviceJson(a, "synthetic");
  EXPECT_NE(j.find("\"schema_version\": 1"), std::string::npos);
}

}  // namespace
}  // namespace exitscope
