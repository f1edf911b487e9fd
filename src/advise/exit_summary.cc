#include "advise/exit_summary.h"

#include <algorithm>

namespace exitscope {
namespace {

// include/uapi/linux/kvm.h: KVM_EXIT_X86_WRMSR, an MSR write handed to the VMM.
constexpr uint32_t kKvmExitX86Wrmsr = 30;
// A 2 MiB region of guest-physical memory (a huge page): fault_addr >> 21.
constexpr int kHugePageShift = 21;

const SummarySpec kNoExtras;

bool IsMsrClass(ExitClass c) { return c == ExitClass::kMsrRead || c == ExitClass::kMsrWrite || c == ExitClass::kMsr; }

}  // namespace

void ExitSetStats::Add(const AdvisedExit& e, bool histogram) {
  ++n;
  sum_ns += e.handling_ns;
  max_ns = std::max(max_ns, e.handling_ns);
  if (e.timed) {
    ++timed;
    if (histogram) handling.Add(e.handling_ns);
  }
  msr_writes += e.has_msr ? e.msr_write : e.exit_class != ExitClass::kMsrRead;
  with_msr += e.has_msr;
  const bool not_msr = !IsMsrClass(e.exit_class);
  not_msr_exit += not_msr;
  named_or_not_msr += e.has_msr || not_msr;
  vmm_wrmsr += e.userspace && e.userspace_reason == kKvmExitX86Wrmsr;
  ++per_tid[e.tid];
}

MatchedExits::MatchedExits(const SummarySpec* spec) : spec_(spec ? spec : &kNoExtras) {}

void MatchedExits::CloseBurst(Seq& t) {
  if (!t.burst_len) return;
  ++bursts;
  longest_burst = std::max(longest_burst, t.burst_len);
  ++burst_lengths[t.burst_len];
  t.burst_len = 0;
}

void MatchedExits::Observe(const AdvisedExit& e, uint32_t thread, bool matched) {
  const SummarySpec& s = *spec_;
  if (s.Sequential()) {
    if (thread >= seq_.size()) seq_.resize(thread + 1);
    Seq& t = seq_[thread];
    if (s.hlts_after && e.exit_class == ExitClass::kHlt) hlts_after += t.last_matched;
    if (s.short_halt_ns && t.open_halt) {
      ++halts.bounded;
      halts.shorts += e.ts_ns - t.halt_ts_ns < s.short_halt_ns;
      t.open_halt = false;
    }
    if (s.burst_gap_ns) {
      // ts before the last end (torn or reordered clocks) joins; the subtraction cannot wrap.
      const bool near = e.ts_ns <= t.last_end_ns || e.ts_ns - t.last_end_ns <= s.burst_gap_ns;
      const bool joins = matched && t.last_matched && near;
      if (!joins) CloseBurst(t);
      if (matched) ++t.burst_len;
    }
    if (s.short_halt_ns && matched && !e.timed) {
      t.open_halt = true;
      t.halt_ts_ns = e.ts_ns;
    }
    t.last_matched = matched;
    t.last_end_ns = e.ts_ns + e.dur_ns;
  }
  if (!matched) return;
  Add(e, s.histogram);
  if (s.subset) {
    const int in = s.subset(e);
    if (in & 1) sub[0].Add(e);
    if (in & 2) sub[1].Add(e);
  }
  RipAgg& r = rips.At(e.rip, [](const RipAgg& a) { return a.time_ns + a.exits; });
  ++r.exits;
  r.timed += e.timed;
  r.time_ns += e.handling_ns;
  if (s.key) {
    KeyAgg& k = keys.At(s.key(e), KeyWeight);
    ++k.n;
    k.timed += e.timed;
    k.time_ns += e.handling_ns;
    if (k.n < s.key_values_below) {
      if (e.timed) k.values.push_back(e.handling_ns);
    } else if (!k.values.empty()) {
      std::vector<uint64_t>().swap(k.values);
    }
  }
  if (s.short_halt_ns && e.timed) {
    halts.dur.Add(e.dur_ns);
    const bool short_sleep = e.dur_ns < s.short_halt_ns;
    halts.timed_shorts += short_sleep;
    halts.shorts += short_sleep;
  }
  if (s.regions && e.page_fault) {
    if (regions.size() < kRegionCap)
      regions.Add(e.fault_addr >> kHugePageShift);
    else
      regions_capped = true;
  }
  if (s.preempted_ns && e.handling_ns >= s.preempted_ns) preempted[e.exit_class].Add(e.handling_ns);
}

namespace {
size_t Retained(const ExitSetStats& s) { return s.handling.distinct() + s.per_tid.size(); }
}  // namespace

size_t MatchedExits::RetainedEntries() const {
  size_t n = Retained(*this) + Retained(sub[0]) + Retained(sub[1]) + rips.size() + keys.size() + burst_lengths.size() +
             halts.dur.distinct() + regions.size() + seq_.size();
  for (const auto& [key, k] : keys.entries()) n += k.values.size();
  for (const auto& [c, h] : preempted) n += 1 + h.distinct();
  return n;
}

void MatchedExits::Finish() {
  for (Seq& t : seq_) CloseBurst(t);
}

}  // namespace exitscope
