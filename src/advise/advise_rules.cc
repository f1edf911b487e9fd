// The rule table. Each rule: which exits (match), what its fix removes, whether and what the fix
// saves priced from the trace's own handling times (price) or from this host's bench round trips
// (bench_price), and the numbers a human checks it by (evidence). Thresholds are named constants so
// a rule's sensitivity is reviewed in one place.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "advise/advisor.h"
#include "advise/rule_support.h"
#include "decode/arm64_names.h"

namespace exitscope {
namespace {

using namespace rules;  // NOLINT: the rule table is written in the support vocabulary

// ---- kernel ABI numbers the rules key on -------------------------------------------------------
// arch/x86/include/asm/msr-index.h
constexpr uint32_t kMsrTscDeadline = 0x6e0;  // MSR_IA32_TSC_DEADLINE
constexpr uint32_t kMsrX2apicIcr = 0x830;    // APIC_BASE_MSR (0x800) + (APIC_ICR 0x300 >> 4)
constexpr uint32_t kMsrX2apicTmict = 0x838;  // 0x800 + (APIC_TMICT 0x380 >> 4)
// arch/x86/include/asm/apicdef.h register offsets (VMX APIC_WRITE exit qualification, kvm_apic reg)
constexpr uint32_t kApicIcr = 0x300;
constexpr uint32_t kApicTmict = 0x380;
constexpr uint32_t kApicOffsetMask = 0xfff;  // vmx.c handle_apic_write: exit_qual & 0xfff
// VMX MOV-DR exit qualification (SDM vol. 3 Table 28-4; vmx.c handle_dr DEBUG_REG_ACCESS_*): bits 2:0
// the register, bit 4 set for MOV from DR.
constexpr uint64_t kVmxDrQualRegMask = 0x7;
constexpr uint64_t kVmxDrQualFromDr = 1ull << 4;
// include/uapi/linux/kvm.h
constexpr uint32_t kKvmExitMmio = 6;
constexpr uint32_t kKvmExitX86Rdmsr = 29;  // MSR access handed to the VMM (MSR filter / user-space MSRs)
constexpr uint32_t kKvmExitX86Wrmsr = 30;
// virt/kvm/kvm_main.c / asm/kvm_host.h KVM_HALT_POLL_NS_DEFAULT: polls this long before sleeping.
constexpr uint64_t kHaltPollDefaultNs = 200000;

// ---- thresholds ----------------------------------------------------------------------------------
constexpr uint64_t kMinExits = 50;  // a pattern needs this many exits to be worth a line
constexpr double kMinShare = 0.02;  // … and this share of all exit time
// DR exits with no other exit of their thread between = one burst, however far apart: KVM's lazy
// switching stops intercepting at the first and intercepts again after the next exit of any kind
// (vmx.c handle_dr / svm.c dr_interception set KVM_DEBUGREG_WONT_EXIT; sync_dirty_debug_regs ends it).
constexpr uint64_t kDrBurstGapNs = kBurstGapUnbounded;
constexpr double kDrMinRepeatShare = 0.3;      // repeats among DR exits that say lazy switching is off
constexpr uint64_t kIpiBurstGapNs = 20000;     // ICR writes this close = one multicast IPI
constexpr uint64_t kFaultBurstGapNs = 100000;  // faults this close (and nothing between) = one burst
constexpr uint64_t kDoorbellMinWrites = 50;    // writes to one address before ioeventfd pays
constexpr double kHaltMinShortShare = 0.3;     // short sleeps among HLT exits worth polling for
constexpr uint64_t kPreemptedExitNs = 500000;  // an in-kernel exit this long means the host ran others
constexpr double kExtIntPerVcpuPerSec = 1000;  // host interrupts per second on one vCPU thread: "not isolated"

uint32_t ApicWriteOffset(const AdvisedExit& e) { return static_cast<uint32_t>(e.info1) & kApicOffsetMask; }

// ---- dr-burst --------------------------------------------------------------------------------------
// SVM traces each register as its own reason (read_dr0..15 / write_dr0..15, svm.h SVM_EXIT_READ_DR0 +
// n), VMX one DR_ACCESS (reason 29) with the register in the qualification: ClassifyExit folds both
// into ExitClass::kDr, so bursts mix reads and writes of different registers as a context switch does.
bool MatchDr(const AdvisedExit& e, const MatchContext&) { return e.exit_class == ExitClass::kDr; }

// "16 ×200, 15 ×2, 1 ×2": burst lengths, most frequent first, then longer first.
std::string BurstLengths(const MatchedExits& m, size_t n = 4) {
  std::vector<std::pair<uint64_t, uint64_t>> v(m.burst_lengths.begin(), m.burst_lengths.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i) out += fmt::format("{}{} ×{}", i ? ", " : "", v[i].first, v[i].second);
  if (v.size() > n) out += fmt::format(", {} other lengths", v.size() - n);
  return out;
}

// The register a DR exit accessed: VMX's qualification bits, or SVM's reason.
ExitKey DrRegisterKey(const AdvisedExit& e) {
  if (e.isa == Isa::kVmx) return {1, e.info1 & (kVmxDrQualFromDr | kVmxDrQualRegMask)};
  return {2, e.reason};
}
std::string DrRegisterName(const ExitKey& k) {
  if (k.a == 1) return fmt::format("{} DR{}", k.b & kVmxDrQualFromDr ? "read" : "write", k.b & kVmxDrQualRegMask);
  uint32_t n = static_cast<uint32_t>(k.b) - kSvmReadDr0;
  return fmt::format("{} DR{}", n < kSvmDrCount ? "read" : "write", n % kSvmDrCount);
}

Pricing PriceDr(const MatchedExits& m, const ExitProfile&) {
  const uint64_t bursts = m.bursts;
  Pricing pr;
  uint64_t repeats = m.size() - bursts;  // every exit after its burst's first
  if (m.empty() || repeats < kDrMinRepeatShare * m.size()) {
    pr.flagged = false;
    pr.why_not = fmt::format(
        "{} DR exits in {} bursts: one exit per burst, KVM already switches debug registers "
        "lazily",
        m.size(), bursts);
    return pr;
  }
  // With lazy switching the first access of a burst still exits (and reloads the registers); the rest
  // run without exits. Each avoided exit is priced at the DR exits' mean, so one stretched exit
  // (preemption lands anywhere in a burst) weighs the same whichever position it took.
  Confidence confidence = repeats >= m.size() / 2 ? Confidence::kHigh : Confidence::kMedium;
  uint64_t timed = TimedCount(m);
  if (!timed) {
    pr = Unpriced(fmt::format("all but the first exit of each of {} bursts ({} of {} DR exits) avoided; {}", bursts,
                              repeats, m.size(), kNoTimes));
    pr.confidence = confidence;
    return pr;
  }
  // 128-bit product: hours of DR exit time times millions of repeats would overflow 64 bits.
  pr.saving_ns = static_cast<uint64_t>(static_cast<unsigned __int128>(SumHandlingNs(m)) * repeats / timed);
  pr.how = fmt::format("all but the first exit of each of {} bursts: {} of {} DR exits × mean {}", bursts, repeats,
                       m.size(), FormatDuration(SumHandlingNs(m) / timed));
  pr.confidence = confidence;
  return pr;
}
std::vector<EvidenceItem> EvidenceDr(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  ev.push_back({"bursts", fmt::format("{} (mean {:.1f} exits, longest {})", m.bursts,
                                      m.bursts == 0 ? 0.0 : double(m.size()) / m.bursts, m.longest_burst)});
  ev.push_back({"burst lengths", BurstLengths(m)});
  ev.push_back({"registers", TopBy(m, DrRegisterName, 6)});
  return ev;
}

// ---- timer (TSC deadline / TMICT) -------------------------------------------------------------------
bool MatchTimer(const AdvisedExit& e, const MatchContext&) {
  if (e.has_msr && e.msr_write && (e.msr == kMsrTscDeadline || e.msr == kMsrX2apicTmict)) return true;
  if (e.exit_class == ExitClass::kApicWrite && e.isa == Isa::kVmx) return ApicWriteOffset(e) == kApicTmict;
  return e.has_apic && e.apic_write && e.apic_reg == kApicTmict;
}
Pricing PriceAllOf(const ExitSetStats& m) {
  if (!TimedCount(m)) return Unpriced(kNoTimes);
  Pricing pr;
  // The median, not the sum: one exit stretched by preemption or a lost entry must not price a fix.
  uint64_t median = MedianHandlingNs(m);
  pr.saving_ns = m.size() * median;
  pr.how = fmt::format("upper bound: every matched exit avoided, {} × median {}", m.size(), FormatDuration(median));
  pr.confidence = Confidence::kMedium;
  return pr;
}

Pricing PriceAll(const MatchedExits& m, const ExitProfile&) { return PriceAllOf(m); }

// TMICT writes (the APIC one-shot timer) move to TSC-deadline mode: the guest still writes its timer
// and still exits, but KVM takes WRMSR TSC_DEADLINE on its fast path (x86.c
// handle_fastpath_set_msr_irqoff, with the VMX preemption timer as the hv timer). So each TMICT
// exit saves its handling minus a fast-path exit's, not its whole time. Writes already to
// TSC_DEADLINE are on the fast path: only fewer reprograms in the guest would save, which the trace
// cannot count, so they are not priced.
bool IsTscDeadlineWrite(const AdvisedExit& e) { return e.has_msr && e.msr_write && e.msr == kMsrTscDeadline; }
int TimerSubset(const AdvisedExit& e) { return IsTscDeadlineWrite(e) ? 0 : 1; }  // sub[0]: TMICT writes
Pricing PriceTimer(const MatchedExits& m, const ExitProfile& p) {
  const ExitSetStats& tmict = m.sub[0];
  uint64_t deadline = m.size() - tmict.size();
  if (tmict.empty()) {
    return Unpriced(
        fmt::format("{} TSC_DEADLINE writes, already on KVM's fast path: the exits stay; only "
                    "fewer reprograms in the guest save, which the trace cannot count",
                    deadline));
  }
  if (!TimedCount(tmict))
    return Unpriced(fmt::format("{} TMICT writes would stay exits on the fast path; {}", tmict.size(), kNoTimes));
  uint64_t median = MedianHandlingNs(tmict), fast = FastPathNs(p);
  Pricing pr;
  pr.saving_ns = tmict.size() * (median > fast ? median - fast : 0);
  pr.how = fmt::format(
      "{} TMICT writes stay exits in TSC-deadline mode, on the fast path: each saves its median "
      "{} minus a fast-path exit {} (the trace's quickest exits, {:.0f}th percentile of timed "
      "non-HLT exits){}",
      tmict.size(), FormatDuration(median), FormatDuration(fast), kFastPathQuantile * 100,
      deadline ? fmt::format("; {} TSC_DEADLINE writes already take it, not priced", deadline) : "");
  pr.confidence = Confidence::kMedium;
  return pr;
}
// How many HLT exits come right after a matched exit of their thread, of all HLTs. When most halts
// follow an MSR write of unknown index, that is the guest's idle path re-arming its timer before
// halting (nohz: TSC_DEADLINE) — evidence for a human, not a classification.
std::pair<uint64_t, uint64_t> HltsAfter(const MatchedExits& m, const ExitProfile& p) {
  auto it = p.classes.find(ExitClass::kHlt);
  return {m.hlts_after, it != p.classes.end() ? it->second.exits : 0};
}
// The register an MSR-ish exit touched, as far as the trace says (EvidenceMsr's "registers").
ExitKey MsrRegisterKey(const AdvisedExit& e) {
  if (e.has_msr) return {1, e.msr};
  if (e.exit_class == ExitClass::kApicWrite) return {2, ApicWriteOffset(e)};
  if (e.exit_class == ExitClass::kRdpmc) return {3};
  if (e.has_apic) return {4, e.apic_reg | (uint64_t{e.apic_write} << 32), static_cast<uint64_t>(e.exit_class)};
  if (e.userspace && e.userspace_reason == kKvmExitX86Wrmsr) return {5};
  if (e.userspace && e.userspace_reason == kKvmExitX86Rdmsr) return {6};
  if (IsMsrExit(e)) return {7};
  return {8, static_cast<uint64_t>(e.exit_class)};
}
std::string MsrRegisterName(const ExitKey& k) {
  switch (k.a) {
    case 1: return MsrLabel(static_cast<uint32_t>(k.b));
    case 2: return fmt::format("APIC {:#x}", k.b);
    case 3: return "RDPMC";
    // Matched by its kvm_apic event (an APIC_ACCESS, an emulated MMIO or any other exit the register
    // access was traced in), not by an MSR index.
    case 4:
      return fmt::format("APIC {:#x} {} (kvm_apic in a {} exit)", k.b & 0xffffffffu, (k.b >> 32) ? "write" : "read",
                         ExitClassName(static_cast<ExitClass>(k.c)));
    // KVM traces kvm_msr only for accesses it completes itself.
    case 5: return "MSR write answered by the VMM (KVM_EXIT_X86_WRMSR, index not traced)";
    case 6: return "MSR read answered by the VMM (KVM_EXIT_X86_RDMSR, index not traced)";
    case 7: return "MSR index unknown (no kvm_msr event)";
    default: return fmt::format("{} exit", ExitClassName(static_cast<ExitClass>(k.b)));
  }
}
std::vector<EvidenceItem> EvidenceMsr(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  bool unnamed = m.named_or_not_msr == 0;
  if (auto [after, hlts] = HltsAfter(m, p); unnamed && hlts && after * 2 >= hlts) {
    ev.push_back({"HLTs right after one of these", fmt::format("{} of {}: the guest's idle path re-arming its timer "
                                                               "before halting (TSC_DEADLINE with nohz) looks like "
                                                               "this; record kvm_msr to name the MSR",
                                                               after, hlts)});
  }
  ev.push_back({"registers", TopBy(m, MsrRegisterName)});
  return ev;
}

// ---- IPIs (ICR writes) -------------------------------------------------------------------------------
bool MatchIpi(const AdvisedExit& e, const MatchContext&) {
  if (e.has_msr && e.msr_write && e.msr == kMsrX2apicIcr) return true;
  if (e.isa == Isa::kSvm && e.reason == kSvmAvicIncompleteIpi) return true;
  if (e.exit_class == ExitClass::kApicWrite && e.isa == Isa::kVmx) return ApicWriteOffset(e) == kApicIcr;
  return e.has_apic && e.apic_write && e.apic_reg == kApicIcr;
}
Pricing PriceIpi(const MatchedExits& m, const ExitProfile&) {
  const uint64_t bursts = m.bursts;
  if (!TimedCount(m)) {
    return Unpriced(fmt::format("{} sender exits in {} bursts; {}", m.size(), bursts, kNoTimes));
  }
  Pricing pr;
  pr.saving_ns = m.size() * MedianHandlingNs(m);
  pr.how = fmt::format(
      "every sender exit avoided with IPI virtualization, {} × median {}; PV send-IPI alone folds "
      "each of {} bursts into one hypercall",
      m.size(), FormatDuration(MedianHandlingNs(m)), bursts);
  pr.confidence = Confidence::kMedium;
  return pr;
}
std::vector<EvidenceItem> EvidenceIpi(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  ev.push_back({"bursts", fmt::format("{} (mean {:.1f} ICR writes)", m.bursts,
                                      m.bursts == 0 ? 0.0 : double(m.size()) / m.bursts)});
  return ev;
}

// ---- other APIC register writes (VMX APIC_WRITE trap) -------------------------------------------------
bool MatchApicOther(const AdvisedExit& e, const MatchContext& p) {
  return e.exit_class == ExitClass::kApicWrite && e.isa == Isa::kVmx && !MatchIpi(e, p) && !MatchTimer(e, p);
}
ExitKey ApicRegisterKey(const AdvisedExit& e) { return {ApicWriteOffset(e)}; }
std::string ApicRegisterName(const ExitKey& k) {
  static const std::map<uint32_t, std::string_view> kRegs = {{0x80, "TPR"},   {0xb0, "EOI"},   {0xd0, "LDR"},
                                                             {0xf0, "SVR"},   {0x280, "ESR"},  {0x320, "LVTT"},
                                                             {0x350, "LVT0"}, {0x360, "LVT1"}, {0x3e0, "TDCR"}};
  auto it = kRegs.find(static_cast<uint32_t>(k.a));
  return it != kRegs.end() ? fmt::format("{} ({:#x})", it->second, k.a) : fmt::format("{:#x}", k.a);
}
std::vector<EvidenceItem> EvidenceApic(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  ev.push_back({"APIC registers", TopBy(m, ApicRegisterName)});
  return ev;
}

// ---- PMU ------------------------------------------------------------------------------------------------
bool MatchPmu(const AdvisedExit& e, const MatchContext&) {
  return e.exit_class == ExitClass::kRdpmc || (e.has_msr && IsPmuMsr(e.msr));
}

// ---- other named MSRs -------------------------------------------------------------------------------------
bool MatchMsrOther(const AdvisedExit& e, const MatchContext& p) {
  if (!IsMsrExit(e) || MatchPmu(e, p) || MatchTimer(e, p) || MatchIpi(e, p)) return false;
  return true;
}
// MSRs the VMM answers (KVM_EXIT_X86_RDMSR/WRMSR) lose their trip to the VMM when handled in the
// kernel; the others can only be avoided in the guest: every one of them, at most.
bool MsrToVmm(const AdvisedExit& e) {
  return e.userspace && (e.userspace_reason == kKvmExitX86Rdmsr || e.userspace_reason == kKvmExitX86Wrmsr);
}
int MsrSubset(const AdvisedExit& e) { return MsrToVmm(e) ? 2 : 1; }  // sub[0] in the kernel, sub[1] VMM
Pricing PriceMsrOther(const MatchedExits& m, const ExitProfile& p) {
  bool named = m.with_msr > 0;
  std::string unnamed = named ? ""
                        : p.Has(EventKind::kMsr)
                            ? "; KVM did not trace these MSR indexes: see the RIPs"
                            : "; the trace has no kvm_msr events, so the MSR is unknown: see the RIPs";
  if (!TimedCount(m)) {
    Pricing u = Unpriced(kNoTimes + unnamed);
    u.confidence = Confidence::kLow;
    return u;
  }
  const ExitSetStats &kernel = m.sub[0], &vmm = m.sub[1];
  Pricing pr = kernel.empty() ? Pricing{} : PriceAllOf(kernel);
  if (pr.source == PriceSource::kNone) {
    pr.how += unnamed;
    pr.confidence = Confidence::kLow;
    return pr;
  }
  if (!vmm.empty()) {
    uint64_t cheap = CheapExitNs(p), trip = vmm.handling.ExcessOver(cheap);
    pr.saving_ns += trip;
    pr.how = fmt::format("{}{}{} answered by the VMM: their round trip minus an in-kernel exit ({}) each", pr.how,
                         pr.how.empty() ? "" : "; ", vmm.size(), FormatDuration(cheap));
  }
  pr.how += unnamed;
  pr.confidence = Confidence::kLow;
  return pr;
}

// ---- EPT violation / NPF storms ------------------------------------------------------------------------
bool MatchFault(const AdvisedExit& e, const MatchContext&) {
  if (e.exit_class != ExitClass::kPageFault) return false;
  // SVM reports MMIO as NPF too; those are the doorbell rule's.
  return !e.has_mmio && !(e.userspace && e.userspace_reason == kKvmExitMmio);
}
std::vector<EvidenceItem> EvidenceFault(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  if (m.regions.size()) {
    ev.push_back({"2 MiB regions faulted", m.regions_capped ? fmt::format("more than {}", m.regions.size())
                                                            : fmt::format("{}", m.regions.size())});
  }
  ev.push_back({"bursts", fmt::format("{}", m.bursts)});
  return ev;
}

// ---- HLT --------------------------------------------------------------------------------------------------
// arm64 WFx exits are WFI halts unless kvm_wfx_arm64 said WFE (a yield, no halt).
bool MatchHlt(const AdvisedExit& e, const MatchContext&) {
  return e.exit_class == ExitClass::kHlt && !e.userspace && !e.wfe;
}
// HLT that KVM hands to the VMM (KVM_EXIT_HLT): there is no in-kernel local APIC to wait on.
bool MatchVmmHalt(const AdvisedExit& e, const MatchContext&) { return e.exit_class == ExitClass::kHlt && e.userspace; }
Pricing PriceVmmHalt(const MatchedExits& m, const ExitProfile& p) {
  if (!TimedCount(m)) return Unpriced(kNoTimes);
  Pricing pr;
  uint64_t cheap = CheapExitNs(p);
  pr.saving_ns = m.handling.ExcessOver(cheap);
  pr.how = fmt::format("each halt's VMM round trip minus an in-kernel exit ({})", FormatDuration(cheap));
  pr.confidence = Confidence::kHigh;
  return pr;
}
// Short sleeps among the halts (MatchedExits::HaltSleeps, kept with SummarySpec::short_halt_ns =
// kHaltPollDefaultNs). A timed HLT's sleep is its exit→entry time (dur_ns: blocked and handling). An
// untimed one sleeps at most until its thread's next exit, so one whose next exit follows within the
// poll window certainly slept shorter: untimed halts give a lower bound.
const MatchedExits::HaltSleeps& CountShortHalts(const MatchedExits& m, const ExitProfile&) { return m.halts; }
Pricing PriceHlt(const MatchedExits& m, const ExitProfile& p) {
  Pricing pr;
  const auto& h = CountShortHalts(m, p);
  uint64_t shorts = h.shorts;
  if (shorts < kHaltMinShortShare * m.size()) {
    pr.flagged = false;
    pr.why_not =
        fmt::format("{} {} exits, {}{} shorter than {}: the vCPUs sleep long, polling would not help", m.size(),
                    HaltName(ProfileIsa(p)), h.bounded ? "at least " : "", shorts, FormatDuration(kHaltPollDefaultNs));
    return pr;
  }
  uint64_t cheap = CheapExitNs(p);
  if (!cheap) {
    pr = Unpriced(fmt::format(
        "{} short sleeps would poll instead of exiting; {}", shorts,
        TimedCount(m) ? fmt::format("no timed non-{} exit to price the round trip by", HaltName(ProfileIsa(p)))
                      : std::string(kNoTimes)));
    pr.confidence = Confidence::kMedium;
    return pr;
  }
  pr.saving_ns = shorts * cheap;
  pr.how = fmt::format(
      "{} short sleeps × {} ({}: the round trip guest polling avoids); "
      "wake-up latency comes on top",
      shorts, FormatDuration(cheap), CheapExitLabel(p));
  pr.confidence = Confidence::kMedium;
  return pr;
}
Pricing BenchHlt(const MatchedExits& m, const ExitProfile& p, const BenchCosts& b) {
  Pricing pr = BenchEach(CountShortHalts(m, p).shorts, b.RoundTripNs(kBenchInKernelExit),
                         "an in-kernel exit's round trip (cpuid)");
  if (pr.source == PriceSource::kBench) pr.how = "short sleeps: " + pr.how;
  return pr;
}
std::vector<EvidenceItem> EvidenceHlt(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  const auto& h = CountShortHalts(m, p);
  if (h.dur.count()) ev.push_back({"median halt", FormatDuration(h.dur.Median())});
  std::string bound = h.bounded ? fmt::format(
                                      "; of {} untimed halts, {} short by their thread's next exit (sooner "
                                      "than that: a lower bound)",
                                      h.bounded, h.shorts - h.timed_shorts)
                                : "";
  ev.push_back({fmt::format("halts shorter than {}", FormatDuration(kHaltPollDefaultNs)),
                fmt::format("{} ({}){}", h.shorts, FormatPercent(m.empty() ? 0 : double(h.shorts) / m.size()), bound)});
  if (p.Has(EventKind::kHaltPoll)) ev.push_back({"halt polling", "kvm_halt_poll_ns events present (polling active)"});
  return ev;
}

// ---- MMIO / PIO doorbells handled in the VMM ----------------------------------------------------------------
// Without kvm_userspace_exit the trace cannot say which MMIO/PIO exits went out to the VMM: every
// MMIO/PIO write (or exit of unknown direction) is a candidate, said so, and not priced from the trace.
bool MatchDoorbell(const AdvisedExit& e, const MatchContext& p) {
  if (p.vmm_known) {
    return e.userspace && ((e.has_mmio && e.mmio_write) || (e.has_pio && e.pio_write));
  }
  if (e.has_mmio || e.has_pio) return e.has_mmio ? e.mmio_write : e.pio_write;
  // No detail event: EPT misconfig is KVM's MMIO exit (vmx.c handle_ept_misconfig); IO exits.
  return e.exit_class == ExitClass::kIo || e.exit_class == ExitClass::kMmioFault;
}
// The doorbell's address, or the guest RIP writing it when kvm_mmio/kvm_pio were not recorded.
ExitKey DoorbellKey(const AdvisedExit& e) {
  if (e.has_mmio) return {1, e.gpa};
  if (e.has_pio) return {2, e.port};
  return {3, static_cast<uint64_t>(e.exit_class) | static_cast<uint64_t>(e.isa) << 8, e.rip};
}
std::string DoorbellName(const ExitKey& k) {
  if (k.a == 1) return fmt::format("MMIO {:#x}", k.b);
  if (k.a == 2) return fmt::format("port {:#x}", k.b);
  return fmt::format("{} at rip {:#x}", ExitClassName(static_cast<ExitClass>(k.b & 0xff), static_cast<Isa>(k.b >> 8)),
                     k.c);
}
bool DoorbellIsPio(const ExitKey& k) {
  return k.a == 2 || (k.a == 3 && static_cast<ExitClass>(k.b & 0xff) == ExitClass::kIo);
}
// The writes to addresses (or from RIPs) repeated often enough for an ioeventfd to pay: their count,
// timed count, and what their handling exceeds `cheap` by (when cheap is given).
struct RepeatedWrites {
  uint64_t addrs = 0, n = 0, timed = 0, excess_ns = 0, pio = 0, mmio = 0;
};
// The excess is the rule's whole histogram's minus that of the addresses written fewer times, whose
// handling times each key keeps (SummarySpec::key_values_below) — no histogram per address.
RepeatedWrites RepeatedDoorbells(const MatchedExits& m, uint64_t cheap) {
  RepeatedWrites out;
  uint64_t rare_excess = 0;
  for (const auto& [key, k] : m.keys.entries()) {
    if (k.n < kDoorbellMinWrites) {
      for (uint64_t v : k.values) rare_excess += v > cheap ? v - cheap : 0;
      continue;
    }
    ++out.addrs;
    out.n += k.n;
    out.timed += k.timed;
    (DoorbellIsPio(key) ? out.pio : out.mmio) += k.n;
  }
  const uint64_t all = m.handling.ExcessOver(cheap);
  out.excess_ns = all > rare_excess ? all - rare_excess : 0;
  return out;
}
Pricing PriceDoorbell(const MatchedExits& m, const ExitProfile& p) {
  Pricing pr;
  const RepeatedWrites rep = RepeatedDoorbells(m, CheapExitNs(p));
  const uint64_t addrs = rep.addrs;
  if (!addrs) {
    pr.flagged = false;
    pr.why_not = fmt::format("no address written {} times{}", kDoorbellMinWrites,
                             p.VmmTripsRecorded() ? " through the VMM" : "");
    return pr;
  }
  bool known = p.VmmTripsRecorded();
  constexpr const char* kUnknownTrip = "whether they go out to the VMM is unknown: record kvm_userspace_exit (-e kvm)";
  if (!rep.timed) {
    pr = Unpriced(fmt::format("{} writes to {} repeated address(es) or RIP(s); {}", rep.n, addrs,
                              known ? kNoTimes : kUnknownTrip));
  } else {
    // The trip to the VMM is part of each exit's handling: what exceeds an in-kernel exit is at most it.
    uint64_t cheap = CheapExitNs(p);
    pr.saving_ns = rep.excess_ns;
    pr.how = known ? fmt::format(
                         "each write to {} repeated address(es) costs its VMM round trip minus an in-kernel "
                         "exit ({})",
                         addrs, FormatDuration(cheap))
                   : fmt::format(
                         "each write to {} repeated address(es) or RIP(s) costs its handling minus the {} "
                         "({}): at most, {}",
                         addrs, CheapExitLabel(p), FormatDuration(cheap), kUnknownTrip);
  }
  pr.confidence = known ? Confidence::kHigh : Confidence::kLow;
  if (!known) pr.title = "repeated MMIO/PIO writes (doorbells), trips to the VMM not recorded";
  return pr;
}
// With an ioeventfd the exit stays and KVM signals an eventfd: the bench's VMM-answered write minus
// the same write caught by an ioeventfd.
Pricing BenchDoorbell(const MatchedExits& m, const ExitProfile& p, const BenchCosts& b) {
  const RepeatedWrites rep = RepeatedDoorbells(m, 0);
  const uint64_t mmio = rep.mmio, pio = rep.pio;
  auto mmio_trip = b.ExtraNs(kBenchMmioToUser, kBenchMmioIoeventfd);
  auto pio_trip = b.ExtraNs(kBenchPioToUser, kBenchPioIoeventfd);
  if ((mmio && !mmio_trip) || (pio && !pio_trip)) return Unpriced("the bench has no usable ioeventfd tests");
  Pricing pr;
  pr.source = PriceSource::kBench;
  pr.saving_ns = mmio * mmio_trip.value_or(0) + pio * pio_trip.value_or(0);
  pr.how = fmt::format("{} MMIO writes × {} ({} − {}) + {} PIO writes × {} ({} − {}) on the bench host{}", mmio,
                       FormatDuration(mmio_trip.value_or(0)), kBenchMmioToUser, kBenchMmioIoeventfd, pio,
                       FormatDuration(pio_trip.value_or(0)), kBenchPioToUser, kBenchPioIoeventfd,
                       p.VmmTripsRecorded() ? "" : ", if they all go out to the VMM");
  pr.confidence = Confidence::kLow;
  return pr;
}
// HLT in the VMM: the bench's KVM_EXIT_HLT round trip minus an in-kernel exit's.
Pricing BenchVmmHalt(const MatchedExits& m, const ExitProfile&, const BenchCosts& b) {
  auto trip = b.ExtraNs(kBenchVmmHalt, kBenchInKernelExit);
  if (!trip) return Unpriced("the bench has no usable hlt/cpuid tests");
  Pricing pr;
  pr.source = PriceSource::kBench;
  pr.saving_ns = m.size() * *trip;
  pr.how = fmt::format("{} halts × {} ({} − {} on the bench host)", m.size(), FormatDuration(*trip), kBenchVmmHalt,
                       kBenchInKernelExit);
  pr.confidence = Confidence::kLow;
  return pr;
}
std::vector<EvidenceItem> EvidenceDoorbell(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  ev.push_back({"addresses", TopBy(m, DoorbellName)});
  if (!p.VmmTripsRecorded()) {
    ev.push_back({"out to the VMM", "unknown: record kvm_userspace_exit (-e kvm)"});
  } else if (TimedCount(m)) {
    ev.push_back({"median round trip through the VMM", FormatDuration(MedianHandlingNs(m))});
    ev.push_back({"median in-kernel exit", FormatDuration(CheapExitNs(p))});
  }
  return ev;
}

// ---- host interrupts and preemption on vCPU CPUs ---------------------------------------------------------
// Classes KVM always handles in the kernel: a long one means the vCPU thread was not running (host
// preemption). IO/MMIO/faults may legitimately wait for the VMM, so they only count when the trace
// shows they stayed in the kernel.
bool AlwaysInKernel(const AdvisedExit& e, const MatchContext& p) {
  switch (e.exit_class) {
    case ExitClass::kExternalInterrupt:
    case ExitClass::kCpuid:
    case ExitClass::kApicWrite:
    case ExitClass::kApicAccess:
    case ExitClass::kPause:
    case ExitClass::kPreemptionTimer:
    case ExitClass::kDr:
    case ExitClass::kRdpmc:
    case ExitClass::kMsrRead:
    case ExitClass::kMsrWrite:
    case ExitClass::kMsr: return !e.userspace;
    case ExitClass::kIo:
    case ExitClass::kMmioFault:
    case ExitClass::kPageFault: return p.vmm_known && !e.userspace;
    default: return false;
  }
}
bool MatchNoise(const AdvisedExit& e, const MatchContext& p) {
  if (e.exit_class == ExitClass::kExternalInterrupt) return true;
  return e.handling_ns >= kPreemptedExitNs && AlwaysInKernel(e, p);
}
int NoiseSubset(const AdvisedExit& e) { return e.exit_class == ExitClass::kExternalInterrupt ? 1 : 0; }
uint64_t ClassMedian(const ExitProfile& p, ExitClass c) {
  auto it = p.classes.find(c);
  return it != p.classes.end() ? it->second.handling.Median() : 0;
}
Pricing PriceNoise(const MatchedExits& m, const ExitProfile& p) {
  Pricing pr;
  // Typical cost per exit class (its timed exits' median), to price only the excess of the stretched
  // exits (MatchedExits::preempted holds theirs per class).
  const ExitSetStats& ints = m.sub[0];
  const uint64_t ext = ints.n;
  uint64_t preempted = 0;
  for (const auto& [c, h] : m.preempted) {
    preempted += h.count();
    pr.saving_ns += h.ExcessOver(ClassMedian(p, c));
  }
  // Per thread: a noisy vCPU must not be averaged away by quiet ones.
  ThreadRate worst = BusiestThread(ints, p);
  bool noisy = worst.per_s >= kExtIntPerVcpuPerSec;
  if (!noisy && preempted == 0) {
    pr.flagged = false;
    pr.why_not = fmt::format(
        "host interrupts at most {:.1f} /s on one vCPU thread (needs {:.0f}), no in-kernel "
        "exit over {}",
        worst.per_s, kExtIntPerVcpuPerSec, FormatDuration(kPreemptedExitNs));
    return pr;
  }
  std::string busiest = noisy ? fmt::format("host interrupts {:.1f} /s on thread {}", worst.per_s, worst.tid) : "";
  if (noisy && !TimedCount(ints) && preempted == 0) {
    pr = Unpriced(fmt::format("{}; {}", busiest, kNoTimes));
    pr.confidence = Confidence::kLow;
    return pr;
  }
  if (noisy) pr.saving_ns += ext * ClassMedian(p, ExitClass::kExternalInterrupt);
  // Without an interrupt storm the saving is only the preempted exits' stretch: they stay exits.
  if (!noisy) pr.removes = Removes::kHandling;
  pr.how = fmt::format("{} exits stretched past {} priced by their excess over their reason's median{}", preempted,
                       FormatDuration(kPreemptedExitNs),
                       noisy ? fmt::format(", plus every host-interrupt exit at its median ({})", busiest) : "");
  pr.confidence = preempted >= 3 ? Confidence::kMedium : Confidence::kLow;
  return pr;
}
std::vector<EvidenceItem> EvidenceNoise(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  uint64_t preempted = 0, worst = m.max_ns;
  for (const auto& [c, h] : m.preempted) preempted += h.count();
  const ExitSetStats& ints = m.sub[0];
  ev.push_back({"host interrupts", fmt::format("{}; {}", ints.size(), DescribeRate(BusiestThread(ints, p)))});
  ev.push_back({fmt::format("exits over {}", FormatDuration(kPreemptedExitNs)), fmt::format("{}", preempted)});
  ev.push_back({"longest", FormatDuration(worst)});
  return ev;
}

// ---- arm64 system-register traps ---------------------------------------------------------------------------
bool MatchArm64PmuReg(const AdvisedExit& e, const MatchContext&) {
  return e.isa == Isa::kArm64 && e.has_sysreg && IsArm64PmuSysReg(e.sysreg);
}
bool MatchArm64TimerReg(const AdvisedExit& e, const MatchContext&) {
  return e.isa == Isa::kArm64 && e.has_sysreg && IsArm64TimerSysReg(e.sysreg);
}
// Every other SYS64 trap, named by kvm_sys_access or not (then the PCs say where).
bool MatchArm64OtherReg(const AdvisedExit& e, const MatchContext& p) {
  return e.isa == Isa::kArm64 && e.exit_class == ExitClass::kSysReg && !MatchArm64PmuReg(e, p) &&
         !MatchArm64TimerReg(e, p);
}
ExitKey SysRegKey(const AdvisedExit& e) { return {e.has_sysreg, e.sysreg, e.sysreg_write}; }
std::string SysRegName(const ExitKey& k) {
  if (!k.a) return "register unknown (no kvm_sys_access / kvm_handle_sys_reg)";
  const uint32_t reg = static_cast<uint32_t>(k.b);
  std::string name = Arm64SysRegName(reg);
  if (name.empty()) name = Arm64SysRegGenericName(reg);
  return fmt::format("{} {} {}", name, Arm64SysRegTuple(reg), k.c ? "write" : "read");
}
std::vector<EvidenceItem> EvidenceSysReg(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  ev.push_back({"registers", TopBy(m, SysRegName)});
  return ev;
}

// x2APIC ICR writes are WRMSRs KVM answers itself; xAPIC ICR writes (APIC_WRITE) are priced as an
// in-kernel exit.
Pricing BenchIpi(const MatchedExits& m, const ExitProfile& p, const BenchCosts& b) {
  bool msr = m.not_msr_exit == 0;
  return msr ? BenchMsrExit(m, p, b) : BenchInKernelExit(m, p, b);
}
// Guest-avoidable MSR exits at an in-kernel MSR round trip; VMM-answered ones at the bench's
// VMM-answered access minus the in-kernel one.
Pricing BenchMsr(const MatchedExits& m, const ExitProfile& p, const BenchCosts& b) {
  const ExitSetStats& kernel = m.sub[0];
  const uint64_t vmm_writes = m.sub[1].vmm_wrmsr, vmm_reads = m.sub[1].n - vmm_writes;
  Pricing pr;
  pr.source = PriceSource::kBench;
  if (!kernel.empty()) pr = BenchMsrExitOf(kernel, b);
  if (pr.source != PriceSource::kBench) return pr;
  if (vmm_reads || vmm_writes) {
    auto r = b.ExtraNs(kBenchMsrReadToUser, kBenchMsrRead), w = b.ExtraNs(kBenchMsrWriteToUser, kBenchMsrWrite);
    if ((vmm_reads && !r) || (vmm_writes && !w)) return Unpriced("the bench has no usable MSR-to-VMM tests");
    pr.saving_ns += vmm_reads * r.value_or(0) + vmm_writes * w.value_or(0);
    pr.how += fmt::format("{}{} VMM-answered writes × {} + {} reads × {} (their trip to the VMM on the bench host)",
                          pr.how.empty() ? "" : "; ", vmm_writes, FormatDuration(w.value_or(0)), vmm_reads,
                          FormatDuration(r.value_or(0)));
  }
  pr.confidence = Confidence::kLow;
  return pr;
}

const Rule kRules[] = {
    {"dr-burst",
     "debug-register accesses exit in bursts",
     "Let KVM switch debug registers lazily: after the first DR exit it stops intercepting and restores "
     "them on the next exit (kvm-unit-tests vmexit mov_dr: 3357 → 118 cycles). Bursts mean that is off: "
     "host-side hardware breakpoints on the guest (KVM_SET_GUEST_DEBUG / gdbstub), a nested hypervisor "
     "intercepting DRs, or an old host kernel.",
     MatchDr,
     kMinExits,
     kMinShare,
     Removes::kExit,
     PriceDr,
     EvidenceDr,
     BenchInKernelExit,
     RuleIsa::kX86,
     {.burst_gap_ns = kDrBurstGapNs, .key = DrRegisterKey}},
    {"ipi",
     "IPIs: ICR writes exit on the sender",
     "Enable IPI virtualization (Intel IPIv: kvm_intel.enable_ipiv, AMD AVIC) or PV send-IPI "
     "(KVM_FEATURE_PV_SEND_IPI, on by default with QEMU -cpu kvm=on) so one hypercall covers many "
     "targets; IPI storms from TLB shootdowns (e.g. jemalloc madvise/munmap) shrink with fewer unmaps.",
     MatchIpi,
     kMinExits,
     kMinShare,
     Removes::kExit,
     PriceIpi,
     EvidenceIpi,
     BenchIpi,
     RuleIsa::kX86,
     {.burst_gap_ns = kIpiBurstGapNs, .histogram = true}},
    {"timer",
     "timer reprogramming (TSC_DEADLINE / TMICT writes)",
     "Reprogram less in the guest (nohz idle re-arms the timer before every HLT; fewer high-rate hrtimers). "
     "TMICT writes mean the guest uses the APIC one-shot timer: offer TSC-deadline mode (QEMU -cpu "
     "…,+tsc-deadline), whose writes KVM takes on its fast path with the VMX preemption timer "
     "(kvm_intel.preemption_timer=1).",
     MatchTimer,
     kMinExits,
     kMinShare,
     Removes::kHandling,
     PriceTimer,
     EvidenceMsr,
     nullptr,
     RuleIsa::kX86,
     {.hlts_after = true, .key = MsrRegisterKey, .subset = TimerSubset}},
    {"apic-write",
     "other APIC register writes trap (APIC_WRITE)",
     "With APICv, EOI/TPR writes should not exit: check enable_apicv, level-triggered interrupts in the "
     "EOI-exit bitmap (IOAPIC lines: prefer MSI), and TPR writes from the guest's interrupt code.",
     MatchApicOther,
     kMinExits,
     kMinShare,
     Removes::kExit,
     PriceAll,
     EvidenceApic,
     BenchInKernelExit,
     RuleIsa::kX86,
     {.key = ApicRegisterKey, .histogram = true}},
    {"pmu",
     "virtual PMU MSR accesses and RDPMC",
     "The guest programs its PMU (perf, or the NMI watchdog: nmi_watchdog=0 in the guest). If nobody "
     "profiles inside, hide the PMU (QEMU -cpu …,pmu=off or kvm.enable_pmu=0).",
     MatchPmu,
     kMinExits,
     kMinShare,
     Removes::kExit,
     PriceAll,
     EvidenceMsr,
     BenchMsrExit,
     RuleIsa::kX86,
     {.hlts_after = true, .key = MsrRegisterKey, .histogram = true}},
    {"msr",
     "other MSR accesses",
     "Find who touches these MSRs at the RIPs listed; frequent ones may be avoidable in the guest or "
     "passed through. MSRs answered by the VMM (MSR filter, KVM_CAP_X86_USER_SPACE_MSR) pay a round "
     "trip to user space each: handle hot ones in the kernel.",
     MatchMsrOther,
     kMinExits,
     kMinShare,
     Removes::kExit,
     PriceMsrOther,
     EvidenceMsr,
     BenchMsr,
     RuleIsa::kX86,
     {.hlts_after = true, .key = MsrRegisterKey, .subset = MsrSubset}},
    {"ept-fault",
     "EPT violation / NPF storms (guest memory faulted in)",
     "Back guest memory with huge pages (hugetlbfs or THP, QEMU memory-backend … prealloc=on), avoid host "
     "memory compaction/KSM/swap under the VM; faults right after boot are normal warm-up.",
     MatchFault,
     kMinExits,
     kMinShare,
     Removes::kExit,
     PriceAll,
     EvidenceFault,
     nullptr,
     RuleIsa::kAny,
     {.burst_gap_ns = kFaultBurstGapNs, .regions = true, .histogram = true},
     "stage-2 abort storms (guest memory faulted in)"},
    {"halt-poll",
     "HLT exits with short sleeps",
     "Let idle vCPUs poll before halting: guest cpuidle-haltpoll (guest_halt_poll_ns) avoids the exit, "
     "host halt_poll_ns avoids the schedule-out; both trade CPU time for wake-up latency.",
     MatchHlt,
     kMinExits,
     kMinShare,
     Removes::kExit,
     PriceHlt,
     EvidenceHlt,
     BenchHlt,
     RuleIsa::kAny,
     {.short_halt_ns = kHaltPollDefaultNs},
     "WFx exits with short sleeps",
     // Guest cpuidle-haltpoll is an x86 guest driver. KVM/arm64 (arm.c kvm_vcpu_should_clear_twi)
     // stops trapping WFI by default only for a vCPU alone on its CPU with GICv4 direct injection;
     // Linux 6.11 added kvm-arm.wfi_trap_policy.
     "Let the vCPU wait in the guest: with WFI untrapped the guest waits on its own CPU without exiting. "
     "KVM leaves WFI untrapped by default only for a vCPU alone on its CPU whose interrupts are injected "
     "directly (GICv4 vLPIs/vSGIs); Linux 6.11+ kvm-arm.wfi_trap_policy=notrap does it for every vCPU "
     "(only where each vCPU has a CPU of its own). Host halt_poll_ns avoids the schedule-out. Both trade CPU time for "
     "wake-up latency."},
    {"vmm-halt",
     "HLT handled by the VMM (no in-kernel irqchip)",
     "Create the in-kernel irqchip (KVM_CREATE_IRQCHIP / QEMU kernel-irqchip=on or split) so KVM blocks the "
     "halted vCPU itself, with halt polling, instead of returning to the VMM on every HLT.",
     MatchVmmHalt,
     kMinExits,
     kMinShare,
     Removes::kVmmTrip,
     PriceVmmHalt,
     CountTime,
     BenchVmmHalt,
     RuleIsa::kX86,
     {.histogram = true}},
    {"vmm-doorbell",
     "MMIO/PIO writes handled in the VMM (userspace exits)",
     "Register an ioeventfd for these doorbell addresses (virtio: QEMU ioeventfd=on, vhost) so KVM signals "
     "an eventfd instead of returning to the VMM; MMIO doorbells take the fast-MMIO path (~10 % of "
     "TCP_RR when handled the slow way).",
     MatchDoorbell,
     kMinExits,
     kMinShare,
     Removes::kVmmTrip,
     PriceDoorbell,
     EvidenceDoorbell,
     BenchDoorbell,
     RuleIsa::kAny,
     {.key = DoorbellKey, .key_values_below = kDoorbellMinWrites, .vmm_dependent = true, .histogram = true},
     "MMIO writes handled in the VMM (userspace exits)",  // arm64 has no port I/O
     // Fast MMIO (the EPT-misconfig shortcut) and the TCP_RR figure are x86's; arm64 matches the
     // ioeventfd in its stage-2 abort handler.
     "Register an ioeventfd for these doorbell addresses (virtio: QEMU ioeventfd=on, vhost) so KVM "
     "signals an eventfd from its stage-2 abort handler instead of returning to the VMM."},
    {"host-noise",
     "host interrupts and preemption on vCPU CPUs",
     "Isolate the vCPU CPUs: pin vCPU threads, isolcpus/nohz_full, steer device IRQs away (irqaffinity), "
     "keep other tasks off those CPUs.",
     MatchNoise,
     kMinExits,
     kMinShare,
     Removes::kExit,
     PriceNoise,
     EvidenceNoise,
     nullptr,
     RuleIsa::kAny,
     {.preempted_ns = kPreemptedExitNs, .subset = NoiseSubset, .vmm_dependent = true}},
    {"arm64-pmu",
     "arm64 PMU system-register traps",
     "The guest programs its vPMU (perf, a PMU-based watchdog, a driver probing counters): each access "
     "traps to KVM. If nobody profiles inside, create the vCPU without a PMU (QEMU -cpu …,pmu=off; a VMM: "
     "no KVM_ARM_VCPU_PMU_V3 feature).",
     MatchArm64PmuReg,
     kMinExits,
     kMinShare,
     Removes::kExit,
     PriceAll,
     EvidenceSysReg,
     nullptr,
     RuleIsa::kArm64,
     {.key = SysRegKey, .histogram = true}},
    {"arm64-timer",
     "arm64 generic-timer register traps",
     "Timer and counter registers the guest reaches that KVM emulates by trapping (the EL1 physical timer "
     "CNTP_*, counters KVM has to offset): use the virtual timer and counter in the guest (Linux's default "
     "in a VM) and reprogram less (nohz idle re-arms the timer before every WFI).",
     MatchArm64TimerReg,
     kMinExits,
     kMinShare,
     Removes::kExit,
     PriceAll,
     EvidenceSysReg,
     nullptr,
     RuleIsa::kArm64,
     {.key = SysRegKey, .histogram = true}},
    {"arm64-sysreg",
     "other arm64 system-register traps (SYS64)",
     "Find who touches these registers at the PCs listed: ID-register reads at run time can be cached in "
     "the guest, set/way cache maintenance (DC CISW/CSW/ISW) belongs to firmware and boot, and VM control "
     "registers trap only until the guest has its MMU and caches on (HCR_EL2.TVM).",
     MatchArm64OtherReg,
     kMinExits,
     kMinShare,
     Removes::kExit,
     PriceAll,
     EvidenceSysReg,
     nullptr,
     RuleIsa::kArm64,
     {.key = SysRegKey, .histogram = true}},
};

// The rules' match functions in kRules' order, as template arguments: Bits inlines each.
template <bool (*... Match)(const AdvisedExit&, const MatchContext&)>
struct RuleMatches {
  static uint32_t Bits(const AdvisedExit& e, const MatchContext& c) {
    uint32_t bits = 0, bit = 1;
    ((bits |= Match(e, c) ? bit : 0, bit <<= 1), ...);
    return bits;
  }
  // True when kRules lists exactly these, in this order.
  static bool SameAsTable() {
    bool (*const order[])(const AdvisedExit&, const MatchContext&) = {Match...};
    if (std::size(order) != std::size(kRules)) return false;
    for (size_t i = 0; i < std::size(order); ++i) {
      if (order[i] != kRules[i].match) return false;
    }
    return true;
  }
};
using AllMatches =
    RuleMatches<MatchDr, MatchIpi, MatchTimer, MatchApicOther, MatchPmu, MatchMsrOther, MatchFault, MatchHlt,
                MatchVmmHalt, MatchDoorbell, MatchNoise, MatchArm64PmuReg, MatchArm64TimerReg, MatchArm64OtherReg>;
static_assert(std::size(kRules) <= 32, "MatchAdviseRules answers in a uint32_t");

}  // namespace

std::span<const Rule> AdviseRules() { return kRules; }

uint32_t MatchAdviseRules(const AdvisedExit& e, const MatchContext& c) { return AllMatches::Bits(e, c); }

bool MatchAdviseRulesInOrder() {
  static const bool same = AllMatches::SameAsTable();
  return same;
}

}  // namespace exitscope
