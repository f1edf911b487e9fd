// The advisor's input: each VM exit with its handling time and what KVM did while handling it (MSR
// index, port, MMIO address, a trip to the VMM, a page fault). Rules read only this, so they can be
// unit-tested on synthetic exits and fed from any source.
// In: KvmEvents in time order (any reader), paired by analysis/exit_pairer (the same ExitSamples and
// diagnostics as `report`). Out: totals, per-class and per-thread figures and, per rule, the bounded
// summary of the exits it matched (advise/exit_summary.h) — the untimed exits too (entry lost or never
// recorded: a kvm_exit-only capture still has counts, rates and RIPs to advise on). No exit is kept:
// memory is flat in the trace's length (issue 18); each exit is folded in as the pairer emits it.
// Assumption: kvm_exit … kvm_entry on one host thread bracket one exit; the kvm events between them on
// that thread (kvm_msr, kvm_pio, kvm_mmio, kvm_userspace_exit, kvm_page_fault, kvm_apic) belong to it.
#pragma once

#include <cstdint>
#include <array>
#include <map>
#include <memory>
#include <set>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "advise/advised_exit.h"
#include "advise/bounded_stats.h"
#include "advise/exit_summary.h"
#include "decode/exit_reason_codes.h"
#include "analysis/exit_driver.h"
#include "analysis/exit_pairer.h"
#include "analysis/vm_grouper.h"
#include "model/diagnostics.h"
#include "model/kvm_event.h"
#include "model/trace_meta.h"
#include "model/event_source.h"
#include "symbols/kaslr_slide.h"

namespace exitscope {

struct Rule;          // advise/advisor.h
struct MatchContext;  // advise/advisor.h

// One host vCPU thread's exits, for rates per thread (not diluted over the other vCPUs and VMs).
struct ThreadActivity {
  int32_t vcpu = -1;
  uint64_t exits = 0;
  uint64_t first_ts_ns = 0, last_ts_ns = 0;  // its first exit, its last exit's end
  uint32_t index = 0;                        // dense, in order of first exit: rules' sequence state
  uint64_t SpanNs() const { return last_ts_ns > first_ts_ns ? last_ts_ns - first_ts_ns : 0; }
};

struct ExitProfile {
  uint64_t exits = 0;  // timed and untimed
  uint64_t timed_exits = 0;
  uint64_t total_exit_ns = 0;  // handling time of the timed exits (blocked time excluded)
  uint64_t blocked_ns = 0;     // time vCPUs were blocked inside exits (HLT/MWAIT waiting for work)
  uint64_t first_ts_ns = 0, last_ts_ns = 0;
  std::map<int32_t, ThreadActivity> threads;  // host tid → its exits
  // The diagnostics said data was lost (a data-loss or error counter): counts are lower bounds and
  // the advisor lowers its confidence. partial_counters names them.
  bool partial = false;
  std::vector<std::string> partial_counters;
  // Which event kinds the trace had at all: a rule that needs kvm_msr says so when it is missing.
  bool has_event[static_cast<int>(EventKind::kCount)] = {};
  ExitRun run;                              // what the driver saw (CollectExits), for the context block
  std::set<Isa> isas;                       // of the exits
  uint64_t vmm_exits = 0, vmm_time_ns = 0;  // exits that went out to the VMM (kvm_userspace_exit)
  struct ClassStats {
    uint64_t exits = 0, time_ns = 0;
    // Its timed exits' handling, kept apart by whether they went out to the VMM so one insert per
    // exit serves both the class's median (host-noise) and in_kernel; `handling` joins them at Finish.
    ValueHistogram kernel_part, vmm_part;
    ValueHistogram handling;
  };
  std::map<ExitClass, ClassStats> classes;
  // Handling times of the timed exits KVM kept in the kernel (as far as the trace tells), HLT aside:
  // the trace's own price of a cheap exit (rule_support CheapExitNs, FastPathNs).
  ValueHistogram in_kernel;
  // Distinct guest-kernel (RIP, class) pairs for the KASLR slide vote (symbols/kaslr_slide.h), capped.
  static constexpr size_t kSiteRipCap = 1 << 16;
  std::vector<SiteRip> site_rips;
  // The rules the exits were matched against (AdviseRules() unless a test gave its own) and, per rule,
  // what it matched; a rule whose match depends on VmmTripsRecorded() is kept under both answers.
  std::span<const Rule> rules;
  std::vector<std::unique_ptr<MatchedExits>> matched;  // 2 per rule: [vmm unknown, vmm recorded]
  // Entries held in all of the above (exits are not: none is kept), for tests of flat memory.
  size_t RetainedEntries() const;
  const MatchedExits& Matched(size_t rule) const {
    const auto& alt = matched[2 * rule + 1];
    return alt && VmmTripsRecorded() ? *alt : *matched[2 * rule];
  }
  uint64_t SpanNs() const { return last_ts_ns > first_ts_ns ? last_ts_ns - first_ts_ns : 0; }
  bool Has(EventKind k) const { return has_event[static_cast<int>(k)]; }
  // Whether the trace would show a trip to the VMM: it has kvm_userspace_exit events, or KVM's
  // detail events that only an all-of-kvm recording (-e kvm, which includes kvm_userspace_exit)
  // brings along — then no kvm_userspace_exit means no trip. A kvm_exit/kvm_entry-only capture
  // cannot tell, and the advisor says "unknown".
  bool VmmTripsRecorded() const { return Has(EventKind::kUserspaceExit) || VmmTripsInferred(); }
  bool VmmTripsInferred() const {
    return !Has(EventKind::kUserspaceExit) &&
           (Has(EventKind::kMmio) || Has(EventKind::kFastMmio) || Has(EventKind::kPio) || Has(EventKind::kMsr) ||
            Has(EventKind::kPageFault) || Has(EventKind::kEmulateInsn));
  }
};

// Standalone (tests): Add() feeds events through its own pairer. CollectExits runs it on the one
// pipeline driver instead, as event tap (kvm_apic, which kinds were recorded, the span) and exit sink.
class ExitCollector : public ExitSampleSink, public KvmEventTap {
 public:
  // rules: AdviseRules() when empty.
  ExitCollector(const TraceMeta* meta, Diagnostics* diagnostics, std::span<const Rule> rules = {});
  ExitCollector(const ExitCollector&) = delete;  // the pairer and the per-exit caches point into it
  ExitCollector& operator=(const ExitCollector&) = delete;
  void Add(const KvmEvent& e) {
    OnKvmEvent(e);
    pairer_.OnEvent(e);
  }
  void OnKvmEvent(const KvmEvent& e) override;
  void Lost(const LostEvents& lost) { pairer_.OnLost(lost); }
  ExitProfile Finish();
  void OnExitSample(const ExitSample& s) override { Keep(s, true); }
  void OnUntimedExit(const ExitSample& s) override { Keep(s, false); }

 private:
  struct ApicAccess {  // kvm_apic is not one of the pairer's details; kept per thread here
    bool seen = false, write = false;
    uint32_t reg = 0;
  };
  void Keep(const ExitSample& s, bool timed);
  void Fold(const AdvisedExit& x, uint32_t thread);
  // Per host thread, what is looked up once rather than per exit: its ThreadActivity (std::map nodes
  // stay put) and its VM / vCPU identity (VmGrouper's answers depend on the tid and vcpu_id only).
  struct ThreadSlot {
    ThreadActivity* activity = nullptr;
    int64_t vm = -1;
    int32_t vcpu_id = -1, vcpu = -1;  // VcpuIndex's answer (-1: none) for that vcpu_id
  };
  ThreadSlot& Thread(int32_t tid, int32_t vcpu_id);
  // The (rule, answer) summaries still fed, in rule order: rebuilt once when VMM trips become known.
  struct Feed {
    bool (*match)(const AdvisedExit&, const MatchContext&);
    MatchedExits* matched;
    bool vmm_known, sequential;
    uint32_t rule;  // index into profile_.rules
  };
  // The rules are AdviseRules(), matched all at once (MatchAdviseRules) rather than one call each.
  bool match_inline_ = false;
  void BuildFeeds(bool vmm_known);
  const TraceMeta* meta_;
  const Diagnostics* diagnostics_;
  ExitPairer pairer_;
  VmGrouper vms_;
  std::unordered_map<int32_t, ApicAccess> apic_;
  std::unordered_map<int32_t, ThreadSlot> thread_slots_;
  int32_t last_tid_ = -1;
  ThreadSlot* last_slot_ = nullptr;
  std::vector<Feed> feeds_;
  bool feeds_vmm_known_ = false;
  // With match_inline_, Fold walks only what can need it: the feed of each rule that matched under
  // "not recorded" (by rule; -1: none), the sequential feeds under it (they also see non-matches),
  // and the feeds kept under "recorded", which call their own match.
  std::vector<int32_t> unknown_feed_by_rule_;
  std::vector<uint32_t> sequential_unknown_feeds_, known_feeds_;
  uint32_t isas_seen_ = 0;                                      // bit per Isa already in profile_.isas
  std::array<ExitProfile::ClassStats*, 256> class_stats_ = {};  // by ExitClass, into profile_.classes
  struct SiteRipHash {
    size_t operator()(const std::pair<uint64_t, ExitClass>& k) const {
      return static_cast<size_t>((k.first * 0x9e3779b97f4a7c15ull) ^ static_cast<uint64_t>(k.second));
    }
  };
  std::unordered_set<std::pair<uint64_t, ExitClass>, SiteRipHash> site_rips_;
  struct SiteMemo {  // a (RIP, class) already in site_rips_
    uint64_t rip = 0;
    ExitClass exit_class = ExitClass::kOther;
    bool used = false;
  };
  std::array<SiteMemo, 64> site_memo_{};
  ExitProfile profile_;
};

// Sets profile->partial from the data-loss / error counters (Diagnostics::HasDataLoss, the rule that
// makes `report` say PARTIAL and exit 65).
void MarkPartial(const Diagnostics& diagnostics, ExitProfile* profile);

// Reads a whole source into a profile.
ExitProfile CollectExits(KvmEventSource* source);

}  // namespace exitscope
