#include "analysis/exit_pairer.h"

#include <algorithm>

namespace exitscope {
namespace {

constexpr const char* kExitBeforeFirstEntryText =
    "exits of a thread before its first entry in the trace (still paired)";

}  // namespace

ExitPairer::ExitPairer(const TraceMeta& meta, Diagnostics* diagnostics, ExitSampleSink* sink)
    : diagnostics_(diagnostics), sink_(sink) {
  // In a flight-recorder buffer each CPU's oldest pages were overwritten at different times: before
  // the latest per-CPU start, another CPU's events (an entry after migration) may be gone, so an exit
  // there could look endless (Perfetto's ftrace_parser drops them the same way).
  if (meta.buffer_overwritten) {
    for (const auto& [cpu, ts] : meta.cpu_first_ts_ns) start_cutoff_ns_ = std::max(start_cutoff_ns_, ts);
  }
}

ExitPairer::ThreadState& ExitPairer::State(int32_t tid) {
  if (tid == cached_tid_ && cached_) return *cached_;
  // unordered_map nodes keep their address across rehashing, so the cache stays valid.
  cached_ = &threads_[tid];
  cached_tid_ = tid;
  return *cached_;
}

void ExitPairer::OnLost(const LostEvents& lost) {
  // The lost events may include the entry of a thread that migrated onto lost.cpu, so every open
  // exit is suspect, not only those of threads last seen there; open exits are at most one per vCPU.
  for (auto& [tid, t] : threads_) {
    if (t.has_open) {
      EmitUntimed(t);
      diagnostics_->Bump(kPairDroppedByLoss, Severity::kDataLoss,
                         "open exits counted untimed: the source lost events while they were open");
    }
    // Whatever the loss swallowed, the thread's next entry may have no exit: do not count it twice.
    t.expect_orphan_entry = true;
  }
}

void ExitPairer::OnEvent(const KvmEvent& e) {
  switch (e.kind) {
    case EventKind::kExit: OnExit(e, State(e.tid)); break;
    case EventKind::kEntry: OnEntry(e, State(e.tid)); break;
    case EventKind::kMsr:
    case EventKind::kPio:
    case EventKind::kMmio:
    case EventKind::kCr:
    case EventKind::kHypercall:
    case EventKind::kUserspaceExit:
    case EventKind::kPageFault:
    case EventKind::kEmulateInsn:
    case EventKind::kFastMmio:
    case EventKind::kApic: OnDetail(e, State(e.tid)); break;
    default: break;
  }
}

void ExitPairer::EmitUntimed(ThreadState& t) {
  t.has_open = false;
  t.open.dur_ns = 0;
  t.open.entry_cpu = -1;
  ++counts_.untimed;
  sink_->OnUntimedExit(t.open);
}

void ExitPairer::OnExit(const KvmEvent& e, ThreadState& t) {
  ++counts_.exits;
  if (t.has_open) {
    EmitUntimed(t);
    if (counts_.entries == 0) {
      ++lost_entry_before_any_entry_;
    } else {
      diagnostics_->Bump(kPairLostEntry, Severity::kDataLoss,
                         "exit followed by another exit of the same thread: the entry between was lost; "
                         "the first exit is counted, not timed");
    }
  }
  ExitSample& s = t.open;
  s.tid = e.tid;
  s.vcpu_id = e.vcpu_id;
  s.exit_cpu = e.cpu;
  s.entry_cpu = -1;
  s.isa = e.isa;
  s.reason = e.reason;
  s.ts_ns = e.ts_ns;
  s.dur_ns = 0;
  s.rip = e.rip;
  s.info1 = e.info1;
  s.info2 = e.info2;
  s.intr_info = e.intr_info;
  s.to_userspace = false;
  s.userspace_reason = 0;
  s.detail_count = 0;
  s.details_dropped = 0;
  if (e.ts_ns < start_cutoff_ns_) {
    EmitUntimed(t);
    t.expect_orphan_entry = true;
    diagnostics_->Bump(kPairBeforeBufferStart, Severity::kInfo,
                       "exits before the latest per-CPU start of an overwritten buffer (counted, not timed)");
    return;
  }
  if (!t.seen_entry) {
    if (counts_.entries == 0) {
      ++exit_before_any_entry_;
    } else {
      diagnostics_->Bump(kPairExitBeforeFirstEntry, Severity::kInfo, kExitBeforeFirstEntryText);
    }
  }
  t.has_open = true;
}

void ExitPairer::OnEntry(const KvmEvent& e, ThreadState& t) {
  if (counts_.entries++ == 0 && lost_entry_before_any_entry_) {
    // The trace does record entries after all: the exits that followed exits did lose theirs.
    diagnostics_->Bump(kPairLostEntry, Severity::kDataLoss,
                       "exit followed by another exit of the same thread: the entry between was lost; "
                       "the first exit is counted, not timed",
                       lost_entry_before_any_entry_);
    lost_entry_before_any_entry_ = 0;
  }
  if (counts_.entries == 1 && exit_before_any_entry_) {
    diagnostics_->Bump(kPairExitBeforeFirstEntry, Severity::kInfo, kExitBeforeFirstEntryText,
                       exit_before_any_entry_);
    exit_before_any_entry_ = 0;
  }
  bool first = !t.seen_entry;
  t.seen_entry = true;
  if (!t.has_open) {
    if (t.expect_orphan_entry || e.ts_ns < start_cutoff_ns_) {
      // Already accounted for by the loss / buffer-start counters.
    } else if (first) {
      diagnostics_->Bump(kPairFirstEntryWithoutExit, Severity::kInfo,
                         "a thread's first entry in the trace (its exit happened before the trace)");
    } else {
      diagnostics_->Bump(kPairEntryWithoutExit, Severity::kDataLoss,
                         "entry with no open exit on its thread: an exit was lost");
    }
    t.expect_orphan_entry = false;
    return;
  }
  t.expect_orphan_entry = false;
  ExitSample& s = t.open;
  if (e.ts_ns < s.ts_ns) {
    // Time went backwards within one thread: the source counts that; the pair cannot be timed.
    EmitUntimed(t);
    diagnostics_->Bump(kPairEntryWithoutExit, Severity::kDataLoss,
                       "entry with no open exit on its thread: an exit was lost");
    return;
  }
  t.has_open = false;
  s.entry_cpu = e.cpu;
  s.dur_ns = e.ts_ns - s.ts_ns;
  if (s.vcpu_id < 0) s.vcpu_id = e.vcpu_id;
  if (s.entry_cpu != s.exit_cpu) {
    diagnostics_->Bump(kPairCpuMigration, Severity::kInfo,
                       "exits whose thread migrated CPU before its entry (still timed)");
  }
  ++counts_.paired;
  sink_->OnExitSample(s);
}

void ExitPairer::OnDetail(const KvmEvent& e, ThreadState& t) {
  if (!t.has_open) {
    diagnostics_->Bump(kPairDetailOutsideExit, Severity::kInfo,
                       "detail events (kvm_msr, kvm_pio …) outside any open exit of their thread");
    return;
  }
  ExitSample& s = t.open;
  if (e.kind == EventKind::kUserspaceExit && !s.to_userspace) {
    s.to_userspace = true;
    s.userspace_reason = e.reason;
  }
  if (s.detail_count == ExitSample::kMaxDetails) {
    if (s.details_dropped++ == 0) {
      diagnostics_->Bump(kPairDetailsTruncated, Severity::kInfo,
                         "exits with more detail events than kept per exit (the rest are not broken down)");
    }
    return;
  }
  ExitDetail& d = s.details[s.detail_count++];
  d.kind = e.kind;
  d.write = e.write;
  d.failed = false;
  d.size = e.size;
  d.aux = e.aux;
  d.key = e.info1;
  switch (e.kind) {
    case EventKind::kMsr: d.failed = e.error_code != 0; break;
    case EventKind::kUserspaceExit: d.key = e.reason; break;
    case EventKind::kPio: d.aux = e.count; break;
    default: break;
  }
}

void ExitPairer::Finish() {
  uint64_t final_open = 0;
  for (auto& [tid, t] : threads_) {
    if (!t.has_open) continue;
    EmitUntimed(t);
    ++final_open;
  }
  if (counts_.entries == 0 && counts_.exits != 0) {
    // Recorded with kvm_exit only (a common way to record): nothing was lost, there is nothing to time.
    diagnostics_->Bump(kPairEntryNotRecorded, Severity::kInfo,
                       "exits counted, not timed: the trace has no kvm_entry events (record -e kvm:kvm_entry "
                       "too, or -e kvm)",
                       counts_.exits);
    lost_entry_before_any_entry_ = 0;
    exit_before_any_entry_ = 0;
    return;
  }
  if (final_open) {
    diagnostics_->Bump(kPairFinalExit, Severity::kInfo,
                       "exits still open when the trace ended (counted, not timed)", final_open);
  }
}

}  // namespace exitscope
