// What advise keeps of the exits one rule matched: counts, times, a handling-time histogram, per-thread
// counts, top RIPs and keys, and — where the rule's pricing needs the order of a thread's exits — a
// per-thread sequence state (bursts, the HLT after a matched exit, an untimed HLT's next exit).
// In: every exit of the trace in each thread's exit order (Observe), matched or not when the rule
// needs sequences, else only the matched ones. Out: the figures price/evidence functions read.
// Bounded: counters are O(1); the histograms and key tables are capped (advise/bounded_stats.h);
// per-thread state is one small struct per host vCPU thread; burst lengths keep one counter per
// distinct length (at most √(2·matched) of them). Nothing grows with the trace's length but those.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "advise/advised_exit.h"
#include "advise/bounded_stats.h"

namespace exitscope {

// A rule's grouping key of an exit (MSR index, doorbell address, register …), three words so a
// doorbell's (class, RIP) fallback fits; the rule's own function names it for humans.
struct ExitKey {
  uint64_t a = 0, b = 0, c = 0;
  bool operator==(const ExitKey&) const = default;
};
struct ExitKeyHash {
  size_t operator()(const ExitKey& k) const {
    return static_cast<size_t>((k.a * 0x9e3779b97f4a7c15ull) ^ (k.b * 0xc2b2ae3d27d4eb4full) ^ (k.c + (k.a << 7)));
  }
};

// Which extra state a rule's price/evidence functions read (the common counts are always kept).
// SummarySpec::burst_gap_ns for bursts that only another exit of their thread ends.
inline constexpr uint64_t kBurstGapUnbounded = UINT64_MAX;

struct SummarySpec {
  uint64_t burst_gap_ns = 0;                     // > 0: back-to-back bursts per thread (rule_support Bursts' rule);
                                                 // kBurstGapUnbounded: only another exit ends a burst
  bool hlts_after = false;                       // HLT exits right after a matched exit of their thread
  uint64_t short_halt_ns = 0;                    // > 0: matched HLTs sleeping less (timed, or bounded by the next exit)
  bool regions = false;                          // distinct 2 MiB guest-physical regions faulted
  uint64_t preempted_ns = 0;                     // > 0: per exit class, the handling times of matched exits this long
  ExitKey (*key)(const AdvisedExit&) = nullptr;  // evidence grouping (TopBy); nullptr: none
  // > 0: a key's timed handling times are kept while it has fewer exits than this (doorbells: the
  // "repeated address" threshold), so the rule's histogram minus those is its repeated keys' exactly.
  uint64_t key_values_below = 0;
  int (*subset)(const AdvisedExit&) = nullptr;  // bit i set: the exit is also in sub-set i (i < 2)
  bool vmm_dependent = false;                   // match reads MatchContext::vmm_known: kept under both answers
  // The matched exits' handling histogram (median, excess over a cost) is read; sub-sets keep theirs
  // always. Off for rules that only count: a histogram insert is the collector's dearest step.
  bool histogram = false;
  bool Sequential() const { return burst_gap_ns || hlts_after || short_halt_ns; }
};

// Counts and times of a set of exits; price helpers (SumHandlingNs, MedianHandlingNs …) read these.
struct ExitSetStats {
  uint64_t n = 0, timed = 0, sum_ns = 0, max_ns = 0;
  uint64_t msr_writes = 0;              // write by kvm_msr, else by exit class (rule_support BenchMsrExit)
  uint64_t with_msr = 0;                // kvm_msr seen
  uint64_t not_msr_exit = 0;            // exit class is no MSR access
  uint64_t named_or_not_msr = 0;        // with_msr or not_msr_exit
  uint64_t vmm_wrmsr = 0;               // went to the VMM as KVM_EXIT_X86_WRMSR
  ValueHistogram handling;              // handling_ns of the timed ones (when kept)
  std::map<int32_t, uint64_t> per_tid;  // host vCPU threads: as many as the VMs have vCPUs
  void Add(const AdvisedExit& e, bool histogram = true);
  size_t size() const { return n; }
  bool empty() const { return n == 0; }
};

class MatchedExits : public ExitSetStats {
 public:
  static constexpr size_t kRipCap = 4096;        // distinct RIPs held exactly per rule
  static constexpr size_t kKeyCap = 4096;        // distinct keys held exactly per rule
  static constexpr size_t kRegionCap = 1 << 18;  // 512 GiB of guest memory in 2 MiB regions

  explicit MatchedExits(const SummarySpec* spec = nullptr);
  MatchedExits(MatchedExits&&) = default;
  MatchedExits& operator=(MatchedExits&&) = default;
  // `thread` is the collector's dense index of e.tid. Call for every exit when spec().Sequential(),
  // else for the matched ones only.
  void Observe(const AdvisedExit& e, uint32_t thread, bool matched);
  // Whether an unmatched exit of `thread` would change nothing here: its thread's previous exit was not
  // matched (so its end is never read), no burst or HLT is open. Most exits, for most rules: the
  // collector skips their Observe.
  bool Unmoved(uint32_t thread) const {
    if (thread >= seq_.size()) return false;
    const Seq& t = seq_[thread];
    return !t.last_matched && !t.open_halt && t.burst_len == 0;
  }
  void Finish();  // closes the open bursts
  const SummarySpec& spec() const { return *spec_; }
  // Entries held in every container (histogram buckets, keys, threads …): what bounded means, counted.
  size_t RetainedEntries() const;

  ExitSetStats sub[2];
  struct RipAgg {
    uint64_t exits = 0, timed = 0, time_ns = 0;
  };
  TopKTable<uint64_t, RipAgg> rips{kRipCap};
  struct KeyAgg {
    uint64_t n = 0, timed = 0, time_ns = 0;
    std::vector<uint64_t> values;  // spec().key_values_below: fewer than that many, so bounded
  };
  TopKTable<ExitKey, KeyAgg, ExitKeyHash> keys{kKeyCap};
  // Bursts (spec().burst_gap_ns): an exit joins its thread's burst when the previous exit of that
  // thread was matched too and ended at most the gap before it (or at any time before it, for
  // kBurstGapUnbounded).
  uint64_t bursts = 0, longest_burst = 0;
  std::map<uint64_t, uint64_t> burst_lengths;  // length → bursts
  uint64_t hlts_after = 0;                     // spec().hlts_after
  struct HaltSleeps {                          // spec().short_halt_ns
    uint64_t shorts = 0, timed_shorts = 0, bounded = 0;
    ValueHistogram dur;  // timed HLTs' exit→entry time
  } halts;
  FlatCounts regions;  // spec().regions: region → faults
  bool regions_capped = false;
  std::map<ExitClass, ValueHistogram> preempted;  // spec().preempted_ns

 private:
  struct Seq {
    bool last_matched = false;
    bool open_halt = false;  // an untimed matched HLT waiting for its thread's next exit
    uint64_t last_end_ns = 0, burst_len = 0, halt_ts_ns = 0;
  };
  void CloseBurst(Seq& t);
  const SummarySpec* spec_;
  std::vector<Seq> seq_;
};

// Time of a key-table entry, for eviction and ranking: heavier first.
inline uint64_t KeyWeight(const MatchedExits::KeyAgg& k) { return k.time_ns + k.n; }

}  // namespace exitscope
