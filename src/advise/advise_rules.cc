// The rule table. Each rule: which exits (match), whether and what the fix saves, priced from the
// trace's own exit times (price), and the numbers a human checks it by (evidence). Thresholds are
// named constants so a rule's sensitivity is reviewed in one place.
#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "advise/advisor.h"
#include "decode/msr_names.h"

namespace exitscope {
namespace {

// ---- kernel ABI numbers the rules key on -------------------------------------------------------
// arch/x86/include/asm/msr-index.h
constexpr uint32_t kMsrTscDeadline = 0x6e0;        // MSR_IA32_TSC_DEADLINE
constexpr uint32_t kMsrX2apicIcr = 0x830;          // APIC_BASE_MSR (0x800) + (APIC_ICR 0x300 >> 4)
constexpr uint32_t kMsrX2apicTmict = 0x838;        // 0x800 + (APIC_TMICT 0x380 >> 4)
// arch/x86/include/asm/apicdef.h register offsets (VMX APIC_WRITE exit qualification, kvm_apic reg)
constexpr uint32_t kApicIcr = 0x300;
constexpr uint32_t kApicTmict = 0x380;
constexpr uint32_t kApicOffsetMask = 0xfff;        // vmx.c handle_apic_write: exit_qual & 0xfff
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
constexpr uint64_t kMinExits = 50;             // a pattern needs this many exits to be worth a line
constexpr double kMinShare = 0.02;             // … and this share of all exit time
constexpr uint64_t kDrBurstGapNs = 100000;     // DR exits this close (and nothing between) = one burst
constexpr double kDrMinRepeatShare = 0.3;      // repeats among DR exits that say lazy switching is off
constexpr uint64_t kIpiBurstGapNs = 20000;     // ICR writes this close = one multicast IPI
constexpr uint64_t kDoorbellMinWrites = 50;    // writes to one address before ioeventfd pays
constexpr double kHaltMinShortShare = 0.3;     // short sleeps among HLT exits worth polling for
constexpr uint64_t kPreemptedExitNs = 500000;  // an in-kernel exit this long means the host ran others
constexpr double kExtIntPerVcpuPerSec = 1000;  // host interrupts per vCPU-second that say "not isolated"

bool IsMsrExit(const AdvisedExit& e) {
  return e.exit_class == ExitClass::kMsrRead || e.exit_class == ExitClass::kMsrWrite ||
         e.exit_class == ExitClass::kMsr;
}
uint32_t ApicWriteOffset(const AdvisedExit& e) {
  return static_cast<uint32_t>(e.info1) & kApicOffsetMask;
}
bool IsPmuMsr(uint32_t msr) {
  // msr-index.h: MSR_P6_PERFCTR0.. / MSR_P6_EVNTSEL0.., IA32_PERFCTR/PMC, fixed counters & globals,
  // AMD MSR_K7_EVNTSEL0..PERFCTR3 and MSR_F15H_PERF_CTL/CTR.
  return (msr >= 0xc1 && msr <= 0xc8) || (msr >= 0x186 && msr <= 0x18d) || (msr >= 0x309 && msr <= 0x30c) ||
         (msr >= 0x38d && msr <= 0x391) || (msr >= 0x4c1 && msr <= 0x4c8) ||
         (msr >= 0xc0010000 && msr <= 0xc0010007) || (msr >= 0xc0010200 && msr <= 0xc001020b);
}
// "IA32_TSC_DEADLINE (0x6e0)" from the one MSR table (decode/msr_names.h); "PMU 0x…" or the bare
// number for an MSR it does not name.
std::string MsrLabel(uint32_t msr) {
  std::string name = MsrName(msr);
  if (!name.empty()) return fmt::format("{} ({:#x})", name, msr);
  if (IsPmuMsr(msr)) return fmt::format("PMU {:#x}", msr);
  return fmt::format("{:#x}", msr);
}

// Groups matched exits by a key and lists the top few with count and time.
template <typename KeyFn>
std::string TopBy(const MatchedExits& m, KeyFn key, size_t n = 3) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> g;
  for (const AdvisedExit* e : m) {
    auto& v = g[key(*e)];
    ++v.first;
    v.second += e->dur_ns;
  }
  std::vector<std::pair<std::string, std::pair<uint64_t, uint64_t>>> v(g.begin(), g.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i) {
    out += fmt::format("{}{} ×{} ({})", i ? ", " : "", v[i].first, v[i].second.first, FormatNs(v[i].second.second));
  }
  return out;
}

uint64_t MedianNs(std::vector<uint64_t> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

// The cost of an exit KVM handles without leaving the kernel: the median of the trace's own
// in-kernel, non-HLT exits. Used to price a fix that turns an expensive exit into a cheap one.
uint64_t CheapExitNs(const ExitProfile& p) {
  std::vector<uint64_t> v;
  for (const auto& e : p.exits) {
    if (!e.userspace && e.exit_class != ExitClass::kHlt) v.push_back(e.dur_ns);
  }
  return MedianNs(v);
}

double PerVcpuSecond(uint64_t n, const MatchedExits&, const ExitProfile& p) {
  std::set<int32_t> threads;  // every vCPU thread of the trace, not only those with matched exits
  for (const AdvisedExit& e : p.exits) threads.insert(e.tid);
  double s = p.SpanNs() / 1e9;
  return s > 0 && !threads.empty() ? n / s / threads.size() : 0;
}

std::vector<EvidenceItem> CountTime(const MatchedExits& m, const ExitProfile& p) {
  return {{"exits", fmt::format("{}", m.size())},
          {"exit time", FormatNs(SumDurNs(m))},
          {"mean per exit", FormatNs(m.empty() ? 0 : SumDurNs(m) / m.size())},
          {"rate", fmt::format("{:.1f} /s per vCPU", PerVcpuSecond(m.size(), m, p))}};
}

// ---- dr-burst --------------------------------------------------------------------------------------
// SVM traces each register as its own reason (read_dr0..15 / write_dr0..15, svm.h SVM_EXIT_READ_DR0 +
// n), VMX one DR_ACCESS (reason 29) with the register in the qualification: ClassifyExit folds both
// into ExitClass::kDr, so bursts mix reads and writes of different registers as a context switch does.
bool MatchDr(const AdvisedExit& e, const ExitProfile&) { return e.exit_class == ExitClass::kDr; }

// "16 ×200, 15 ×2, 1 ×2": burst lengths, most frequent first, then longer first.
std::string BurstLengths(const std::vector<MatchedExits>& bursts, size_t n = 4) {
  std::map<size_t, uint64_t> by_len;
  for (const auto& b : bursts) ++by_len[b.size()];
  std::vector<std::pair<size_t, uint64_t>> v(by_len.begin(), by_len.end());
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  std::string out;
  for (size_t i = 0; i < v.size() && i < n; ++i) out += fmt::format("{}{} ×{}", i ? ", " : "", v[i].first, v[i].second);
  if (v.size() > n) out += fmt::format(", {} other lengths", v.size() - n);
  return out;
}

Pricing PriceDr(const MatchedExits& m, const ExitProfile& p) {
  auto bursts = Bursts(m, p, kDrBurstGapNs);
  Pricing pr;
  uint64_t repeats = m.size() - bursts.size();  // every exit after its burst's first
  if (m.empty() || repeats < kDrMinRepeatShare * m.size()) {
    pr.flagged = false;
    pr.why_not = fmt::format("{} DR exits in {} bursts: one exit per burst, KVM already switches debug registers "
                             "lazily", m.size(), bursts.size());
    return pr;
  }
  // With lazy switching the first access of a burst still exits (and reloads the registers); the rest
  // run without exits. Each avoided exit is priced at the DR exits' mean, so one stretched exit
  // (preemption lands anywhere in a burst) weighs the same whichever position it took.
  // 128-bit product: hours of DR exit time times millions of repeats would overflow 64 bits.
  pr.saving_ns = static_cast<uint64_t>(static_cast<unsigned __int128>(SumDurNs(m)) * repeats / m.size());
  pr.how = fmt::format("all but the first exit of each of {} bursts: {} of {} DR exits × mean {}", bursts.size(),
                       repeats, m.size(), FormatNs(SumDurNs(m) / m.size()));
  pr.confidence = repeats >= m.size() / 2 ? Confidence::kHigh : Confidence::kMedium;
  return pr;
}
std::vector<EvidenceItem> EvidenceDr(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  auto bursts = Bursts(m, p, kDrBurstGapNs);
  size_t longest = 0;
  for (const auto& b : bursts) longest = std::max(longest, b.size());
  ev.push_back({"bursts", fmt::format("{} (mean {:.1f} exits, longest {})", bursts.size(),
                                      bursts.empty() ? 0.0 : double(m.size()) / bursts.size(), longest)});
  ev.push_back({"burst lengths", BurstLengths(bursts)});
  ev.push_back({"registers", TopBy(m, [](const AdvisedExit& e) {
                  if (e.isa == Isa::kVmx) {
                    return fmt::format("{} DR{}", e.info1 & kVmxDrQualFromDr ? "read" : "write",
                                       e.info1 & kVmxDrQualRegMask);
                  }
                  uint32_t n = e.reason - kSvmReadDr0;
                  return fmt::format("{} DR{}", n < kSvmDrCount ? "read" : "write", n % kSvmDrCount);
                }, 6)});
  return ev;
}

// ---- timer (TSC deadline / TMICT) -------------------------------------------------------------------
bool MatchTimer(const AdvisedExit& e, const ExitProfile&) {
  if (e.has_msr && e.msr_write && (e.msr == kMsrTscDeadline || e.msr == kMsrX2apicTmict)) return true;
  if (e.exit_class == ExitClass::kApicWrite && e.isa == Isa::kVmx) return ApicWriteOffset(e) == kApicTmict;
  return e.has_apic && e.apic_write && e.apic_reg == kApicTmict;
}
Pricing PriceAll(const MatchedExits& m, const ExitProfile&) {
  Pricing pr;
  // The median, not the sum: one exit stretched by preemption or a lost entry must not price a fix.
  uint64_t median = MedianDurNs(m);
  pr.saving_ns = m.size() * median;
  pr.how = fmt::format("upper bound: every matched exit avoided, {} × median {}", m.size(), FormatNs(median));
  pr.confidence = Confidence::kMedium;
  return pr;
}
std::vector<EvidenceItem> EvidenceMsr(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  ev.push_back({"registers", TopBy(m, [](const AdvisedExit& e) {
                  if (e.has_msr) return MsrLabel(e.msr);
                  if (e.exit_class == ExitClass::kApicWrite) return fmt::format("APIC {:#x}", ApicWriteOffset(e));
                  if (e.exit_class == ExitClass::kRdpmc) return std::string("RDPMC");
                  // KVM traces kvm_msr only for accesses it completes itself.
                  if (e.userspace && e.userspace_reason == kKvmExitX86Wrmsr) {
                    return std::string("MSR write answered by the VMM (KVM_EXIT_X86_WRMSR, index not traced)");
                  }
                  if (e.userspace && e.userspace_reason == kKvmExitX86Rdmsr) {
                    return std::string("MSR read answered by the VMM (KVM_EXIT_X86_RDMSR, index not traced)");
                  }
                  return std::string("MSR index unknown (no kvm_msr event)");
                })});
  return ev;
}

// ---- IPIs (ICR writes) -------------------------------------------------------------------------------
bool MatchIpi(const AdvisedExit& e, const ExitProfile&) {
  if (e.has_msr && e.msr_write && e.msr == kMsrX2apicIcr) return true;
  if (e.isa == Isa::kSvm && e.reason == kSvmAvicIncompleteIpi) return true;
  if (e.exit_class == ExitClass::kApicWrite && e.isa == Isa::kVmx) return ApicWriteOffset(e) == kApicIcr;
  return e.has_apic && e.apic_write && e.apic_reg == kApicIcr;
}
Pricing PriceIpi(const MatchedExits& m, const ExitProfile& p) {
  Pricing pr;
  pr.saving_ns = m.size() * MedianDurNs(m);
  auto bursts = Bursts(m, p, kIpiBurstGapNs);
  pr.how = fmt::format("every sender exit avoided with IPI virtualization; PV send-IPI alone folds each of "
                       "{} bursts into one hypercall", bursts.size());
  pr.confidence = Confidence::kMedium;
  return pr;
}
std::vector<EvidenceItem> EvidenceIpi(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  auto bursts = Bursts(m, p, kIpiBurstGapNs);
  ev.push_back({"bursts", fmt::format("{} (mean {:.1f} ICR writes)", bursts.size(),
                                      bursts.empty() ? 0.0 : double(m.size()) / bursts.size())});
  return ev;
}

// ---- other APIC register writes (VMX APIC_WRITE trap) -------------------------------------------------
bool MatchApicOther(const AdvisedExit& e, const ExitProfile& p) {
  return e.exit_class == ExitClass::kApicWrite && e.isa == Isa::kVmx && !MatchIpi(e, p) && !MatchTimer(e, p);
}
std::vector<EvidenceItem> EvidenceApic(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  ev.push_back({"APIC registers", TopBy(m, [](const AdvisedExit& e) {
                  static const std::map<uint32_t, std::string_view> kRegs = {
                      {0x80, "TPR"}, {0xb0, "EOI"}, {0xd0, "LDR"}, {0xf0, "SVR"}, {0x280, "ESR"},
                      {0x320, "LVTT"}, {0x350, "LVT0"}, {0x360, "LVT1"}, {0x3e0, "TDCR"}};
                  auto it = kRegs.find(ApicWriteOffset(e));
                  return it != kRegs.end() ? fmt::format("{} ({:#x})", it->second, ApicWriteOffset(e))
                                           : fmt::format("{:#x}", ApicWriteOffset(e));
                })});
  return ev;
}

// ---- PMU ------------------------------------------------------------------------------------------------
bool MatchPmu(const AdvisedExit& e, const ExitProfile&) {
  return e.exit_class == ExitClass::kRdpmc || (e.has_msr && IsPmuMsr(e.msr));
}

// ---- other named MSRs -------------------------------------------------------------------------------------
bool MatchMsrOther(const AdvisedExit& e, const ExitProfile& p) {
  if (!IsMsrExit(e) || MatchPmu(e, p) || MatchTimer(e, p) || MatchIpi(e, p)) return false;
  return true;
}
Pricing PriceMsrOther(const MatchedExits& m, const ExitProfile& p) {
  Pricing pr = PriceAll(m, p);
  bool named = std::any_of(m.begin(), m.end(), [](const AdvisedExit* e) { return e->has_msr; });
  pr.confidence = Confidence::kLow;
  if (!named) {
    pr.how += p.Has(EventKind::kMsr) ? "; KVM did not trace these MSR indexes: see the RIPs"
                                     : "; the trace has no kvm_msr events, so the MSR is unknown: see the RIPs";
  }
  return pr;
}

// ---- EPT violation / NPF storms ------------------------------------------------------------------------
bool MatchFault(const AdvisedExit& e, const ExitProfile&) {
  if (e.exit_class != ExitClass::kPageFault) return false;
  // SVM reports MMIO as NPF too; those are the doorbell rule's.
  return !e.has_mmio && !(e.userspace && e.userspace_reason == kKvmExitMmio);
}
std::vector<EvidenceItem> EvidenceFault(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  std::set<uint64_t> huge;  // distinct 2 MiB guest-physical regions faulted
  for (const AdvisedExit* e : m) {
    if (e->page_fault) huge.insert(e->fault_addr >> 21);
  }
  if (!huge.empty()) ev.push_back({"2 MiB regions faulted", fmt::format("{}", huge.size())});
  ev.push_back({"bursts", fmt::format("{}", Bursts(m, p, kDrBurstGapNs).size())});
  return ev;
}

// ---- HLT --------------------------------------------------------------------------------------------------
bool MatchHlt(const AdvisedExit& e, const ExitProfile&) { return e.exit_class == ExitClass::kHlt && !e.userspace; }
// HLT that KVM hands to the VMM (KVM_EXIT_HLT): there is no in-kernel local APIC to wait on.
bool MatchVmmHalt(const AdvisedExit& e, const ExitProfile&) { return e.exit_class == ExitClass::kHlt && e.userspace; }
Pricing PriceVmmHalt(const MatchedExits& m, const ExitProfile& p) {
  Pricing pr;
  uint64_t cheap = CheapExitNs(p);
  for (const AdvisedExit* e : m) pr.saving_ns += e->dur_ns > cheap ? e->dur_ns - cheap : 0;
  pr.how = fmt::format("each halt's VMM round trip minus an in-kernel exit ({})", FormatNs(cheap));
  pr.confidence = Confidence::kHigh;
  return pr;
}
Pricing PriceHlt(const MatchedExits& m, const ExitProfile& p) {
  Pricing pr;
  uint64_t shorts = 0;
  for (const AdvisedExit* e : m) shorts += e->dur_ns < kHaltPollDefaultNs;
  if (shorts < kHaltMinShortShare * m.size()) {
    pr.flagged = false;
    pr.why_not = fmt::format("{} HLT exits, {} shorter than {}: the vCPUs sleep long, polling would not help",
                             m.size(), shorts, FormatNs(kHaltPollDefaultNs));
    return pr;
  }
  uint64_t cheap = CheapExitNs(p);
  pr.saving_ns = shorts * cheap;
  pr.how = fmt::format("{} short sleeps × {} (median in-kernel exit: the round trip guest polling avoids); "
                       "wake-up latency comes on top", shorts, FormatNs(cheap));
  pr.confidence = Confidence::kMedium;
  return pr;
}
std::vector<EvidenceItem> EvidenceHlt(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  std::vector<uint64_t> d;
  uint64_t shorts = 0;
  for (const AdvisedExit* e : m) {
    d.push_back(e->dur_ns);
    shorts += e->dur_ns < kHaltPollDefaultNs;
  }
  ev.push_back({"median halt", FormatNs(MedianNs(d))});
  ev.push_back({fmt::format("halts shorter than {}", FormatNs(kHaltPollDefaultNs)),
                fmt::format("{} ({})", shorts, FormatPercent(m.empty() ? 0 : double(shorts) / m.size()))});
  if (p.Has(EventKind::kHaltPoll)) ev.push_back({"halt polling", "kvm_halt_poll_ns events present (polling active)"});
  return ev;
}

// ---- MMIO / PIO doorbells handled in the VMM ----------------------------------------------------------------
bool MatchDoorbell(const AdvisedExit& e, const ExitProfile&) {
  return e.userspace && ((e.has_mmio && e.mmio_write) || (e.has_pio && e.pio_write));
}
std::string DoorbellKey(const AdvisedExit& e) {
  return e.has_mmio ? fmt::format("MMIO {:#x}", e.gpa) : fmt::format("port {:#x}", e.port);
}
Pricing PriceDoorbell(const MatchedExits& m, const ExitProfile& p) {
  std::map<std::string, MatchedExits> by_addr;
  for (const AdvisedExit* e : m) by_addr[DoorbellKey(*e)].push_back(e);
  Pricing pr;
  uint64_t cheap = CheapExitNs(p);
  uint64_t addrs = 0;
  for (const auto& [k, v] : by_addr) {
    if (v.size() < kDoorbellMinWrites) continue;
    ++addrs;
    for (const AdvisedExit* e : v) pr.saving_ns += e->dur_ns > cheap ? e->dur_ns - cheap : 0;
  }
  if (!addrs) {
    pr.flagged = false;
    pr.why_not = fmt::format("no address written {} times through the VMM", kDoorbellMinWrites);
    return pr;
  }
  pr.how = fmt::format("each write to {} repeated address(es) costs its VMM round trip minus an in-kernel exit ({})",
                       addrs, FormatNs(cheap));
  pr.confidence = Confidence::kHigh;
  return pr;
}
std::vector<EvidenceItem> EvidenceDoorbell(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  ev.push_back({"addresses", TopBy(m, DoorbellKey)});
  ev.push_back({"median round trip through the VMM", FormatNs(MedianDurNs(m))});
  ev.push_back({"median in-kernel exit", FormatNs(CheapExitNs(p))});
  return ev;
}

// ---- host interrupts and preemption on vCPU CPUs ---------------------------------------------------------
// Classes KVM always handles in the kernel: a long one means the vCPU thread was not running (host
// preemption). IO/MMIO/faults may legitimately wait for the VMM, so they only count when the trace
// shows they stayed in the kernel.
bool AlwaysInKernel(const AdvisedExit& e, const ExitProfile& p) {
  switch (e.exit_class) {
    case ExitClass::kExternalInterrupt: case ExitClass::kCpuid: case ExitClass::kApicWrite:
    case ExitClass::kApicAccess: case ExitClass::kPause: case ExitClass::kPreemptionTimer:
    case ExitClass::kDr: case ExitClass::kRdpmc: case ExitClass::kMsrRead: case ExitClass::kMsrWrite:
    case ExitClass::kMsr:
      return !e.userspace;
    case ExitClass::kIo: case ExitClass::kMmioFault: case ExitClass::kPageFault:
      return p.Has(EventKind::kUserspaceExit) && !e.userspace;
    default:
      return false;
  }
}
bool MatchNoise(const AdvisedExit& e, const ExitProfile& p) {
  if (e.exit_class == ExitClass::kExternalInterrupt) return true;
  return e.dur_ns >= kPreemptedExitNs && AlwaysInKernel(e, p);
}
Pricing PriceNoise(const MatchedExits& m, const ExitProfile& p) {
  uint64_t ext = 0, preempted = 0;
  Pricing pr;
  // Typical cost per exit class, to price only the excess of the stretched exits.
  std::map<ExitClass, MatchedExits> by_class;
  for (const AdvisedExit& e : p.exits) by_class[e.exit_class].push_back(&e);
  std::map<ExitClass, uint64_t> median;
  for (const auto& [c, v] : by_class) median[c] = MedianDurNs(v);
  for (const AdvisedExit* e : m) {
    if (e->exit_class == ExitClass::kExternalInterrupt) ++ext;
    if (e->dur_ns >= kPreemptedExitNs) {
      ++preempted;
      pr.saving_ns += e->dur_ns - std::min(e->dur_ns, median[e->exit_class]);
    }
  }
  double rate = PerVcpuSecond(ext, m, p);
  if (rate < kExtIntPerVcpuPerSec && preempted == 0) {
    pr.flagged = false;
    pr.why_not = fmt::format("{:.1f} host interrupts per vCPU-second, no in-kernel exit over {}", rate,
                             FormatNs(kPreemptedExitNs));
    return pr;
  }
  if (rate >= kExtIntPerVcpuPerSec) pr.saving_ns += ext * median[ExitClass::kExternalInterrupt];
  pr.how = fmt::format("{} exits stretched past {} priced by their excess over their reason's median{}", preempted,
                       FormatNs(kPreemptedExitNs),
                       rate >= kExtIntPerVcpuPerSec ? ", plus every host-interrupt exit at its median" : "");
  pr.confidence = preempted >= 3 ? Confidence::kMedium : Confidence::kLow;
  return pr;
}
std::vector<EvidenceItem> EvidenceNoise(const MatchedExits& m, const ExitProfile& p) {
  auto ev = CountTime(m, p);
  uint64_t preempted = 0, worst = 0;
  for (const AdvisedExit* e : m) {
    preempted += e->dur_ns >= kPreemptedExitNs;
    worst = std::max(worst, e->dur_ns);
  }
  ev.push_back({fmt::format("exits over {}", FormatNs(kPreemptedExitNs)), fmt::format("{}", preempted)});
  ev.push_back({"longest", FormatNs(worst)});
  return ev;
}

const Rule kRules[] = {
    {"dr-burst", "debug-register accesses exit in bursts",
     "Let KVM switch debug registers lazily: after the first DR exit it stops intercepting and restores "
     "them on the next exit (kvm-unit-tests vmexit mov_dr: 3357 → 118 cycles). Bursts mean that is off: "
     "host-side hardware breakpoints on the guest (KVM_SET_GUEST_DEBUG / gdbstub), a nested hypervisor "
     "intercepting DRs, or an old host kernel.",
     MatchDr, kMinExits, kMinShare, PriceDr, EvidenceDr},
    {"ipi", "IPIs: ICR writes exit on the sender",
     "Enable IPI virtualization (Intel IPIv: kvm_intel.enable_ipiv, AMD AVIC) or PV send-IPI "
     "(KVM_FEATURE_PV_SEND_IPI, on by default with QEMU -cpu kvm=on) so one hypercall covers many "
     "targets; IPI storms from TLB shootdowns (e.g. jemalloc madvise/munmap) shrink with fewer unmaps.",
     MatchIpi, kMinExits, kMinShare, PriceIpi, EvidenceIpi},
    {"timer", "timer reprogramming (TSC_DEADLINE / TMICT writes)",
     "Reprogram less in the guest (nohz idle re-arms the timer before every HLT; fewer high-rate hrtimers). "
     "TMICT writes mean the guest uses the APIC one-shot timer: offer TSC-deadline mode (QEMU -cpu "
     "…,+tsc-deadline), whose writes KVM takes on its fast path with the VMX preemption timer "
     "(kvm_intel.preemption_timer=1).",
     MatchTimer, kMinExits, kMinShare, PriceAll, EvidenceMsr},
    {"apic-write", "other APIC register writes trap (APIC_WRITE)",
     "With APICv, EOI/TPR writes should not exit: check enable_apicv, level-triggered interrupts in the "
     "EOI-exit bitmap (IOAPIC lines: prefer MSI), and TPR writes from the guest's interrupt code.",
     MatchApicOther, kMinExits, kMinShare, PriceAll, EvidenceApic},
    {"pmu", "virtual PMU MSR accesses and RDPMC",
     "The guest programs its PMU (perf, or the NMI watchdog: nmi_watchdog=0 in the guest). If nobody "
     "profiles inside, hide the PMU (QEMU -cpu …,pmu=off or kvm.enable_pmu=0).",
     MatchPmu, kMinExits, kMinShare, PriceAll, EvidenceMsr},
    {"msr", "other MSR accesses",
     "Find who touches these MSRs at the RIPs listed; frequent ones may be avoidable in the guest or "
     "passed through. MSRs answered by the VMM (MSR filter, KVM_CAP_X86_USER_SPACE_MSR) pay a round "
     "trip to user space each: handle hot ones in the kernel.",
     MatchMsrOther, kMinExits, kMinShare, PriceMsrOther, EvidenceMsr},
    {"ept-fault", "EPT violation / NPF storms (guest memory faulted in)",
     "Back guest memory with huge pages (hugetlbfs or THP, QEMU memory-backend … prealloc=on), avoid host "
     "memory compaction/KSM/swap under the VM; faults right after boot are normal warm-up.",
     MatchFault, kMinExits, kMinShare, PriceAll, EvidenceFault},
    {"halt-poll", "HLT exits with short sleeps",
     "Let idle vCPUs poll before halting: guest cpuidle-haltpoll (guest_halt_poll_ns) avoids the exit, "
     "host halt_poll_ns avoids the schedule-out; both trade CPU time for wake-up latency.",
     MatchHlt, kMinExits, kMinShare, PriceHlt, EvidenceHlt},
    {"vmm-halt", "HLT handled by the VMM (no in-kernel irqchip)",
     "Create the in-kernel irqchip (KVM_CREATE_IRQCHIP / QEMU kernel-irqchip=on or split) so KVM blocks the "
     "halted vCPU itself, with halt polling, instead of returning to the VMM on every HLT.",
     MatchVmmHalt, kMinExits, kMinShare, PriceVmmHalt, CountTime},
    {"vmm-doorbell", "MMIO/PIO writes handled in the VMM (userspace exits)",
     "Register an ioeventfd for these doorbell addresses (virtio: QEMU ioeventfd=on, vhost) so KVM signals "
     "an eventfd instead of returning to the VMM; MMIO doorbells take the fast-MMIO path (~10 % of "
     "TCP_RR when handled the slow way).",
     MatchDoorbell, kMinExits, kMinShare, PriceDoorbell, EvidenceDoorbell},
    {"host-noise", "host interrupts and preemption on vCPU CPUs",
     "Isolate the vCPU CPUs: pin vCPU threads, isolcpus/nohz_full, steer device IRQs away (irqaffinity), "
     "keep other tasks off those CPUs.",
     MatchNoise, kMinExits, kMinShare, PriceNoise, EvidenceNoise},
};

}  // namespace

std::span<const Rule> AdviseRules() { return kRules; }

}  // namespace exitscope
