// Advisor rules on synthetic exit streams fed through the collector as KvmEvents (the same path a
// real trace takes): each pattern is recognised with the saving its rule promises, and a stream
// without the pattern is not flagged.
#include <gtest/gtest.h>

#include <random>
#include <vector>
#include <nlohmann/json.hpp>

#include "report/advice_reporter.h"
#include "advise/advisor.h"
#include "advise/exit_collector.h"
#include "decode/arm64_exit_codes.h"

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
    if (with_entries_) {
      KvmEvent n = x;
      n.kind = EventKind::kEntry;
      n.ts_ns = now_ + dur_ns;
      collector_.Add(n);
    }
    now_ += dur_ns + gap_ns_;
    return *this;
  }
  // From here on kvm_entry is not recorded (a `-e kvm:kvm_exit` capture): exits stay untimed.
  Stream& WithoutEntries() {
    with_entries_ = false;
    return *this;
  }
  // The source lost events (as tracedat.missed_events would say): the result is PARTIAL.
  Stream& SourceLostEvents() {
    diag_.Bump(DiagId::kTracedatMissedEvents);
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
  bool with_entries_ = true;
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

std::string EvidenceValue(const Finding& f, std::string_view name) {
  for (const auto& e : f.evidence) {
    if (e.name == name) return e.value;
  }
  return "<no " + std::string(name) + ">";
}

// A context switch's DR sequence as SVM traces it (one reason per register and direction), under host
// guest debugging: every access exits. Durations differ per position, so the saving must be the
// repeats' share of DR time, not a per-position sum.
TEST(AdviseRules, SvmDrBurstsNameTheirLengthsAndRegisters) {
  const uint32_t seq[] = {kSvmReadDr0 + 7,  kSvmReadDr0 + 6,  kSvmWriteDr0 + 7, kSvmWriteDr0 + 0,
                          kSvmWriteDr0 + 1, kSvmWriteDr0 + 2, kSvmWriteDr0 + 3, kSvmWriteDr0 + 6,
                          kSvmWriteDr0 + 7, kSvmReadDr0 + 0,  kSvmReadDr0 + 1,  kSvmReadDr0 + 2,
                          kSvmReadDr0 + 3,  kSvmReadDr0 + 6,  kSvmReadDr0 + 7,  kSvmWriteDr0 + 7};
  Stream s;
  for (int i = 0; i < 30; ++i) {
    s.Exit(100, Isa::kSvm, kSvmCpuid, 500);
    for (size_t k = 0; k < std::size(seq); ++k) s.Exit(100, Isa::kSvm, seq[k], k == 0 ? 3000 : 1000);
    s.Gap(50000);
  }
  s.Exit(100, Isa::kSvm, kSvmCpuid, 500).Exit(100, Isa::kSvm, kSvmWriteDr0 + 7, 1000);  // a lone access
  Advice a = s.Run();
  const Finding* f = Find(a, "dr-burst");
  ASSERT_NE(f, nullptr) << RenderAdviceText(a, "synthetic");
  EXPECT_EQ(f->exits, 30u * 16 + 1);
  EXPECT_EQ(EvidenceValue(*f, "burst lengths"), "16 ×30, 1 ×1");
  EXPECT_NE(EvidenceValue(*f, "registers").find("write DR7 ×91"), std::string::npos) << EvidenceValue(*f, "registers");
  const uint64_t dr_ns = 30 * (3000 + 15 * 1000) + 1000;
  EXPECT_EQ(f->time_ns, dr_ns);
  EXPECT_EQ(f->pricing.saving_ns, dr_ns * (30 * 15) / (30 * 16 + 1));
}

TEST(AdviseRules, VmxDrAccessQualificationNamesTheRegister) {
  Stream s;
  for (int i = 0; i < 20; ++i) {
    s.Exit(100, Isa::kVmx, kVmxCpuid, 500);
    for (uint64_t dr : {0, 1, 2, 3}) s.Exit(100, Isa::kVmx, kVmxDrAccess, 1000, 0xffffffff81000010, {}, dr);
    s.Exit(100, Isa::kVmx, kVmxDrAccess, 1000, 0xffffffff81000010, {}, 0x10 | 7);  // MOV from DR7
  }
  Advice a = s.Run();
  const Finding* f = Find(a, "dr-burst");
  ASSERT_NE(f, nullptr) << RenderAdviceText(a, "synthetic");
  EXPECT_EQ(EvidenceValue(*f, "burst lengths"), "5 ×20");
  EXPECT_NE(EvidenceValue(*f, "registers").find("read DR7 ×20"), std::string::npos) << EvidenceValue(*f, "registers");
  EXPECT_NE(EvidenceValue(*f, "registers").find("write DR3 ×20"), std::string::npos) << EvidenceValue(*f, "registers");
  EXPECT_EQ(f->pricing.saving_ns, 20u * 4 * 1000);
}

// Lazy switching stops intercepting DRs at the first exit and starts again after the next exit of any
// kind, however long the guest ran between: a host interrupt splits a burst, a millisecond of guest
// time does not.
TEST(AdviseRules, DrBurstsEndAtAnotherExitNotAfterATime) {
  Stream s;
  for (int i = 0; i < 30; ++i) {
    s.Exit(100, Isa::kSvm, kSvmCpuid, 500);
    for (int k = 0; k < 4; ++k) {
      if (i % 3 == 0 && k == 2) s.Exit(100, Isa::kSvm, kSvmIntr, 800);
      s.Gap(1000000).Exit(100, Isa::kSvm, kSvmReadDr0 + 7, 1000);
    }
  }
  Advice a = s.Run();
  const Finding* f = Find(a, "dr-burst");
  ASSERT_NE(f, nullptr) << RenderAdviceText(a, "synthetic");
  EXPECT_EQ(f->exits, 30u * 4);
  EXPECT_EQ(EvidenceValue(*f, "burst lengths"), "4 ×20, 2 ×20");
  EXPECT_EQ(f->pricing.saving_ns, (20u * 3 + 20 * 1) * 1000);
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
  EXPECT_EQ(f->evidence[4].value, "MMIO 0xd0000000 ×100 (3.000ms)");
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

// The same pattern on arm64 (WFI exits) is titled in arm64's words, and nothing in the advice says HLT.
TEST(AdviseRules, ShortWfxHaltsAreTitledInArm64Words) {
  Stream shorts;
  for (int i = 0; i < 100; ++i)
    shorts.Exit(3, Isa::kArm64, kEsrEcWfx, 50000, 0x1000).Exit(3, Isa::kArm64, kEsrEcHvc64, 800);
  Advice a = shorts.Run();
  const Finding* f = Find(a, "halt-poll");
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, "WFx exits with short sleeps");
  // cpuidle-haltpoll is an x86 guest driver; arm64's remedy is to leave WFI untrapped.
  EXPECT_EQ(f->fix.find("cpuidle-haltpoll"), std::string::npos) << f->fix;
  EXPECT_NE(f->fix.find("wfi_trap_policy"), std::string::npos) << f->fix;
  const std::string text = RenderAdviceText(a, "wfx.dat");
  EXPECT_EQ(text.find("HLT"), std::string::npos) << text;
  EXPECT_NE(text.find("WFx"), std::string::npos) << text;
}

TEST(AdviseRules, CpuidLoopFlagsNothing) {
  Stream s;
  for (int i = 0; i < 500; ++i) s.Exit(3, Isa::kVmx, kVmxCpuid, 800);
  Advice a = s.Run();
  EXPECT_TRUE(a.findings.empty()) << RenderAdviceText(a, "synthetic");
  // Every rule checked, the arm64-only ones excepted (a VMX trace).
  size_t x86_rules = 0;
  for (const Rule& r : AdviseRules()) x86_rules += r.isa != RuleIsa::kArm64;
  EXPECT_LT(x86_rules, AdviseRules().size());
  EXPECT_EQ(a.not_flagged.size(), x86_rules);
  ReportContext context;
  context.source = "synthetic";
  auto j = nlohmann::json::parse(RenderAdviceJson(a, context, {}));
  EXPECT_EQ(j["schema_version"], 2);
  EXPECT_EQ(j["tool"], "exitscope");
  EXPECT_EQ(j["context"]["source"], "synthetic");
  EXPECT_TRUE(j["diagnostics"].empty());
}

TEST(AdviseRules, PartialTraceLowersConfidenceAStep) {
  Stream whole, partial;
  for (Stream* s : {&whole, &partial}) {
    for (int i = 0; i < 40; ++i) {
      for (int k = 0; k < 4; ++k) s->Exit(100, Isa::kVmx, kVmxDrAccess, 1000);
      s->Exit(100, Isa::kVmx, kVmxCpuid, 500).Gap(50000);
    }
  }
  partial.SourceLostEvents();
  Advice a = whole.Run(), b = partial.Run();
  ASSERT_NE(Find(a, "dr-burst"), nullptr);
  ASSERT_NE(Find(b, "dr-burst"), nullptr);
  EXPECT_FALSE(a.partial);
  EXPECT_TRUE(b.partial);
  EXPECT_EQ(Find(a, "dr-burst")->pricing.confidence, Confidence::kHigh);
  EXPECT_EQ(Find(b, "dr-burst")->pricing.confidence, Confidence::kMedium);
  EXPECT_EQ(Find(b, "dr-burst")->pricing.saving_ns, Find(a, "dr-burst")->pricing.saving_ns);
  EXPECT_NE(RenderAdviceText(b, "synthetic").find("PARTIAL: the trace lost data (tracedat.missed_events)"),
            std::string::npos);
}

// A fix whose saving is under 0.5 % of exit time is never ranked first, even when it is the only
// one priced: the unpriced pattern (TSC_DEADLINE writes: the exits stay, only fewer reprograms save)
// comes before it, and the minor one is listed as such.
TEST(AdviseRules, MinorSavingsAreNeverRankedFirst) {
  Stream s;
  for (int i = 0; i < 100; ++i) {
    s.Exit(1, Isa::kVmx, kVmxMsrWrite, 1000, 0xffffffff81000020, {Ev(EventKind::kMsr, 0x6e0, true)});
    s.Exit(1, Isa::kVmx, kVmxMsrWrite, 1000, 0xffffffff81000030, {Ev(EventKind::kMsr, 0x830, true)});  // x2APIC ICR
    // Exit time dominated by long CPUID handling (no rule's business). A HLT's time would be blocked
    // time, not exit time, so it could not dilute the ipi saving.
    s.Exit(1, Isa::kVmx, kVmxCpuid, 400000);  // under host-noise's 500 us
  }
  Advice a = s.Run();
  ASSERT_EQ(a.findings.size(), 2u) << RenderAdviceText(a, "synthetic");
  EXPECT_EQ(a.findings[0].id, "timer");
  EXPECT_EQ(a.findings[0].pricing.source, PriceSource::kNone);
  EXPECT_EQ(a.findings[1].id, "ipi");
  EXPECT_TRUE(a.findings[1].minor);
  EXPECT_EQ(a.findings[1].pricing.saving_ns, 100u * 1000);  // 100 × median 1 us: 0.02 % of exit time
  std::string text = RenderAdviceText(a, "synthetic");
  EXPECT_LT(text.find("[timer]"), text.find("Minor findings"));
  EXPECT_LT(text.find("Minor findings"), text.find("[ipi]"));
}

// TMICT writes keep exiting after the fix (TSC-deadline mode's WRMSR exits, on the fast path): each
// saves its handling minus the trace's quickest exits', not its whole time.
TEST(AdviseRules, TimerFixKeepsTheExitAndSavesPartOfItsHandling) {
  Stream s;
  for (int i = 0; i < 100; ++i) {
    s.Exit(1, Isa::kVmx, kVmxApicWrite, 3000, 0xffffffff81000010, {}, 0x380);
    s.Exit(1, Isa::kVmx, kVmxCpuid, 400).Exit(1, Isa::kVmx, kVmxCpuid, 400);
  }
  Advice a = s.Run();
  const Finding* f = Find(a, "timer");
  ASSERT_NE(f, nullptr) << RenderAdviceText(a, "synthetic");
  EXPECT_EQ(f->removes, Removes::kHandling);
  // 10th percentile of the 300 timed non-HLT exits is a CPUID's 400 ns.
  EXPECT_EQ(f->pricing.saving_ns, 100u * (3000 - 400));
}

// A kvm_apic event traced inside an exit that is no APIC or MSR access names the APIC register and
// the exit it came in, never "MSR index unknown".
TEST(AdviseRules, KvmApicInAHaltIsLabelledByItsRegister) {
  Stream s;
  KvmEvent apic = Ev(EventKind::kApic, 0, true);
  apic.aux = 0x380;  // TMICT
  for (int i = 0; i < 60; ++i) s.Exit(2, Isa::kVmx, kVmxHlt, 3000, 0xffffffff81000040, {apic});
  Advice a = s.Run();
  const Finding* f = Find(a, "timer");
  ASSERT_NE(f, nullptr) << RenderAdviceText(a, "synthetic");
  std::string regs = EvidenceValue(*f, "registers");
  EXPECT_EQ(regs.find("MSR index unknown"), std::string::npos) << regs;
  EXPECT_NE(regs.find("APIC 0x380 write (kvm_apic in a HLT exit) ×60"), std::string::npos) << regs;
}

// Exits without kvm_entry: counted, matched and rated, not priced; a bench prices them.
TEST(AdviseRules, UntimedExitsAreFoundByCountsAndPricedOnlyByABench) {
  Stream s;
  s.WithoutEntries();
  for (int i = 0; i < 200; ++i) s.Exit(5, Isa::kVmx, kVmxMsrWrite, 1000, 0xffffffff81000050);
  s.Exit(5, Isa::kVmx, kVmxCpuid, 1000);
  Advice a = s.Run();
  EXPECT_EQ(a.exits, 201u);
  EXPECT_EQ(a.timed_exits, 0u);
  const Finding* f = Find(a, "msr");
  ASSERT_NE(f, nullptr) << RenderAdviceText(a, "synthetic");
  EXPECT_EQ(f->exits, 200u);
  EXPECT_EQ(f->pricing.source, PriceSource::kNone);
  EXPECT_NE(EvidenceValue(*f, "rate").find("thread 5"), std::string::npos);
}

// Host interrupts on one of two vCPU threads at 1500 /s: averaged over both threads (750 /s) they
// would miss the 1000 /s threshold; per thread they do not, and the noisy thread is named.
TEST(AdviseRules, HostNoiseIsRatedPerThread) {
  Stream s;
  for (int i = 0; i < 3000; ++i) {
    s.Exit(7, Isa::kVmx, kVmxExternalInterrupt, 1000).Exit(8, Isa::kVmx, kVmxCpuid, 1000).Gap(660000);
  }
  Advice a = s.Run();
  const Finding* f = Find(a, "host-noise");
  ASSERT_NE(f, nullptr) << RenderAdviceText(a, "synthetic");
  EXPECT_NE(EvidenceValue(*f, "host interrupts").find("on the busiest vCPU thread, thread 7: 3000 exits"),
            std::string::npos)
      << EvidenceValue(*f, "host interrupts");
  // 3000 exits over thread 7's own span, 2999 × 666 us: 1502.0 /s.
  EXPECT_NE(EvidenceValue(*f, "host interrupts").find("1502.0 /s"), std::string::npos)
      << EvidenceValue(*f, "host interrupts");
  EXPECT_EQ(f->pricing.saving_ns, 3000u * 1000);  // every host-interrupt exit at its median
}

// MMIO writes KVM kept in the kernel, in an -e kvm recording (kvm_mmio present, no
// kvm_userspace_exit): no trip to the VMM, no doorbell. The same exits in a kvm_exit/kvm_entry-only
// capture are doorbell candidates whose trip is unknown.
TEST(AdviseRules, DoorbellTripsUnknownOnlyWithoutKvmDetailEvents) {
  Stream all_kvm, exits_only;
  for (int i = 0; i < 100; ++i) {
    all_kvm.Exit(7, Isa::kVmx, kVmxEptMisconfig, 3000, 0x1040, {Ev(EventKind::kMmio, 0xfe003000, true)});
    exits_only.Exit(7, Isa::kVmx, kVmxEptMisconfig, 3000, 0x1040);
    for (int k = 0; k < 2; ++k) {  // the median non-HLT exit is a CPUID's 1 us
      all_kvm.Exit(7, Isa::kVmx, kVmxCpuid, 1000);
      exits_only.Exit(7, Isa::kVmx, kVmxCpuid, 1000);
    }
  }
  Advice a = all_kvm.Run(), b = exits_only.Run();
  EXPECT_TRUE(a.vmm_known);
  EXPECT_TRUE(a.vmm_inferred);
  EXPECT_EQ(Find(a, "vmm-doorbell"), nullptr) << RenderAdviceText(a, "synthetic");
  EXPECT_FALSE(b.vmm_known);
  const Finding* f = Find(b, "vmm-doorbell");
  ASSERT_NE(f, nullptr) << RenderAdviceText(b, "synthetic");
  EXPECT_EQ(f->removes, Removes::kVmmTrip);
  EXPECT_EQ(f->pricing.confidence, Confidence::kLow);
  // At most each exit's handling over the median non-HLT exit: 100 × (3000 − 1000).
  EXPECT_EQ(f->pricing.saving_ns, 100u * 2000);
  EXPECT_NE(f->pricing.how.find("unknown: record kvm_userspace_exit"), std::string::npos) << f->pricing.how;
  EXPECT_EQ(RenderAdviceText(b, "synthetic").find("in-kernel"), std::string::npos);
}

// The collector matches every rule at once (MatchAdviseRules, each match inlined): its bits must be
// each rule's own match, under both readings of "VMM trips recorded", on exits drawn from the values
// the rules test (classes, reasons of every ISA, the MSRs, APIC registers and offsets, details).
TEST(AdviseRules, AllRulesMatchedAtOnceAsEachRuleMatches) {
  ASSERT_TRUE(MatchAdviseRulesInOrder()) << "MatchAdviseRules inlines another list than AdviseRules()";
  const std::span<const Rule> rules = AdviseRules();
  std::mt19937_64 rng(11);
  auto pick = [&](std::initializer_list<uint64_t> v) { return *(v.begin() + rng() % v.size()); };
  std::vector<uint32_t> hits(rules.size(), 0);
  for (int n = 0; n < 200000; ++n) {
    AdvisedExit e;
    e.isa = static_cast<Isa>(rng() % 4);
    e.exit_class = static_cast<ExitClass>(rng() % (static_cast<int>(ExitClass::kHypercall) + 1));
    e.reason = static_cast<uint32_t>(pick(
        {0, 1, 12, 28, 31, 32, 48, 49, 56, 0x401, 0x402, 0x60, 0x7b, 0x7c, 0x400, 0x18, 0x16, 0x17, 0x01, 0x24, 0x20}));
    e.info1 = pick({0, 0x300, 0x380, 0x310, 0x0b0, 0x830});
    e.has_msr = rng() & 1;
    e.msr = static_cast<uint32_t>(pick({0x6e0, 0x830, 0x838, 0x80b, 0xc1, 0x186, 0x38d, 0xc0010004, 0x10, 0x1b}));
    e.msr_write = rng() & 1;
    e.has_apic = rng() & 1;
    e.apic_write = rng() & 1;
    e.apic_reg = static_cast<uint32_t>(pick({0x300, 0x380, 0x0b0, 0x310}));
    e.has_pio = rng() % 4 == 0;
    e.pio_write = rng() & 1;
    e.has_mmio = rng() % 4 == 0;
    e.mmio_write = rng() & 1;
    e.fast_mmio = rng() % 8 == 0;
    e.userspace = rng() & 1;
    e.userspace_reason = static_cast<uint32_t>(pick({0, 2, 6, 5}));
    e.page_fault = rng() & 1;
    e.has_sysreg = rng() & 1;
    // PMCR_EL0, PMEVCNTR0_EL0, CNTV_CTL_EL0, CNTKCTL_EL1, SCTLR_EL1, or any.
    e.sysreg = rng() % 6 == 0
                   ? static_cast<uint32_t>(rng() % 0x10000)
                   : static_cast<uint32_t>(pick({SysRegEncoding(3, 3, 9, 12, 0), SysRegEncoding(3, 3, 14, 8, 0),
                                                 SysRegEncoding(3, 3, 14, 3, 1), SysRegEncoding(3, 0, 14, 1, 0),
                                                 SysRegEncoding(3, 0, 1, 0, 0)}));
    e.wfe = rng() % 4 == 0;
    e.timed = rng() % 8 != 0;
    e.handling_ns = pick({0, 500, 5000, 50000, 500000});
    e.dur_ns = e.handling_ns * pick({1, 2});
    for (bool vmm_known : {false, true}) {
      const MatchContext c{vmm_known};
      const uint32_t bits = MatchAdviseRules(e, c);
      for (size_t i = 0; i < rules.size(); ++i) {
        const bool want = rules[i].match(e, c);
        ASSERT_EQ(((bits >> i) & 1) != 0, want) << rules[i].id << " on draw " << n << " vmm_known " << vmm_known;
        hits[i] += want;
      }
    }
  }
  for (size_t i = 0; i < rules.size(); ++i) EXPECT_GT(hits[i], 0u) << rules[i].id << " never matched: a weak draw";
}

}  // namespace
}  // namespace exitscope
