#include "analysis/exit_pairer.h"

#include <algorithm>

#include "decode/exit_reason_codes.h"

namespace exitscope {
namespace {

// The exit reasons the resume check needs (the header says why) are decode/exit_reason_codes.h's.
// Where kvm_vcpu_reset puts RIP (x86.c) and where a SIPI starts (CS:0, kvm_vcpu_deliver_sipi_vector).
constexpr uint64_t kResetRip = 0xfff0, kSipiRip = 0;

// Exits after which the guest legitimately resumes anywhere: a context switch, a reset, a nested
// entry or exit, SMM's return, a failed VM entry, SEV-ES.
bool MovesRip(Isa isa, uint32_t reason) {
  if (isa == Isa::kVmx) {
    if (reason & kVmxFailedVmentry) return true;
    switch (reason & kVmxBasicReasonMask) {
      case kVmxTripleFault:
      case kVmxInitSignal:
      case kVmxSipiSignal:
      case kVmxTaskSwitch:
      case kVmxVmlaunch:
      case kVmxVmresume:
      case kVmxInvalidState:
      case kVmxMsrLoadFail:
      case kVmxMceDuringVmentry: return true;
      default: return false;
    }
  }
  if (isa == Isa::kSvm) {
    switch (reason) {
      case kSvmInit:
      case kSvmRsm:
      case kSvmTaskSwitch:
      case kSvmShutdown:
      case kSvmVmrun:
      case kSvmVmgexit:
      case kSvmErr: return true;
      default: return reason >= kSvmSevCodes;
    }
  }
  // arm64 (arch/arm64/kvm/arm.c, hyp/include/hyp/adjust_pc.h): KVM defers a trap's PC increment and
  // any exception it injects to the next run (__kvm_adjust_pc, after kvm_entry is traced) unless
  // KVM_RUN returns to the VMM first, so an entry resumes at the exit's PC or one instruction on.
  // SErrors, illegal exception returns and a hyp stub that is gone are not followed that closely.
  if (isa == Isa::kArm64) return !(reason < kArm64NonTrapBase || reason == kArm64ExitIrq);
  return true;  // unknown ISA: nothing to check against
}

// VMX/SVM instructions reach L0 only from a guest that is itself a hypervisor.
bool RunsNested(Isa isa, uint32_t reason) {
  if (isa == Isa::kVmx) {
    // One mask test per exit (failed VM entries set bit 31: never below 64).
    constexpr uint64_t kNested = (((uint64_t{1} << (kVmxVmon + 1)) - 1) & ~((uint64_t{1} << kVmxVmclear) - 1)) |
                                 (uint64_t{1} << kVmxInvept) | (uint64_t{1} << kVmxInvvpid);
    return reason < 64 && ((kNested >> reason) & 1);
  }
  // VMRUN, VMLOAD, VMSAVE, STGI, CLGI (not VMMCALL, 0x081: a hypercall of any guest).
  return isa == Isa::kSvm && (reason == kSvmVmrun || (reason >= kSvmVmload && reason <= kSvmClgi));
}

// Exits that block the vCPU until an interrupt: HLT, arm64 WFI (kvm_vcpu_wfi -> kvm_vcpu_halt; a
// WFE only yields, kvm_vcpu_on_spin, and is told apart by kvm_wfx_arm64).
bool IsHlt(Isa isa, uint32_t reason) {
  switch (isa) {
    case Isa::kVmx: return reason == kVmxHlt;
    case Isa::kSvm: return reason == kSvmHlt;
    case Isa::kArm64: return reason == kEsrEcWfx;
    default: return false;
  }
}

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
      diagnostics_->Bump(DiagId::kPairDroppedByLoss);
    }
    // Whatever the loss swallowed, the thread's next entry may have no exit: do not count it twice.
    t.expect_orphan_entry = true;
  }
}

void ExitPairer::OnEvent(const KvmEvent& e) {
  // No call here (a call would cost every event a stack frame). A record slightly behind the latest
  // (sources deliver time order; the merger counts those) has a negative gap: no silence.
  const int64_t gap = static_cast<int64_t>(e.ts_ns - last_ts_ns_);
  if (gap >= static_cast<int64_t>(kSilenceNs)) [[unlikely]] {
    ++counts_.silences;
    counts_.silence_ns += static_cast<uint64_t>(gap);
  }
  last_ts_ns_ = e.ts_ns;
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
    case EventKind::kApic:
    case EventKind::kSysReg:
    case EventKind::kHandleSysReg:
    case EventKind::kHvcArm64:
    case EventKind::kWfx:
    case EventKind::kGuestFault: OnDetail(e, State(e.tid)); break;
    case EventKind::kVcpuWakeup: OnWakeup(e, State(e.tid)); break;
    case EventKind::kTimerIrq: ++counts_.timer_irqs; break;
    case EventKind::kVgicIrq: ++counts_.vgic_irqs; break;
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
      diagnostics_->Bump(DiagId::kPairLostEntry);
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
  s.blocked_ns = 0;
  s.detail_count = 0;
  s.details_dropped = 0;
  t.emulated = false;
  t.woken = false;
  t.wfe = false;
  t.silence_at_exit = counts_.silences;
  if (!t.nested && RunsNested(e.isa, e.reason)) t.nested = true;
  if (e.ts_ns < start_cutoff_ns_) {
    EmitUntimed(t);
    t.expect_orphan_entry = true;
    diagnostics_->Bump(DiagId::kPairBeforeBufferStart);
    return;
  }
  if (!t.seen_entry) {
    if (counts_.entries == 0) {
      ++exit_before_any_entry_;
    } else {
      diagnostics_->Bump(DiagId::kPairExitBeforeFirstEntry);
    }
  }
  t.has_open = true;
}

void ExitPairer::OnFirstEntry() {
  if (lost_entry_before_any_entry_) {
    // The trace does record entries after all: the exits that followed exits did lose theirs.
    diagnostics_->Bump(DiagId::kPairLostEntry, lost_entry_before_any_entry_);
    lost_entry_before_any_entry_ = 0;
  }
  if (exit_before_any_entry_) {
    diagnostics_->Bump(DiagId::kPairExitBeforeFirstEntry, exit_before_any_entry_);
    exit_before_any_entry_ = 0;
  }
}

void ExitPairer::OnEntryWithoutExit(const KvmEvent& e, ThreadState& t, bool first) {
  if (t.expect_orphan_entry || e.ts_ns < start_cutoff_ns_) {
    // Already accounted for by the loss / buffer-start counters.
  } else if (first) {
    diagnostics_->Bump(DiagId::kPairFirstEntryWithoutExit);
  } else {
    diagnostics_->Bump(DiagId::kPairEntryWithoutExit);
  }
  t.expect_orphan_entry = false;
}

void ExitPairer::OnEntry(const KvmEvent& e, ThreadState& t) {
  if (counts_.entries++ == 0) [[unlikely]]
    OnFirstEntry();
  bool first = !t.seen_entry;
  t.seen_entry = true;
  if (!t.has_open) {
    OnEntryWithoutExit(e, t, first);
    return;
  }
  t.expect_orphan_entry = false;
  ExitSample& s = t.open;
  if (e.ts_ns < s.ts_ns) {
    // Time went backwards within one thread: the source counts that; the pair cannot be timed.
    EmitUntimed(t);
    diagnostics_->Bump(DiagId::kPairEntryWithoutExit);
    return;
  }
  // The level (guest_mode) the exit happened at is the one its thread last entered.
  const uint8_t exit_level = t.last_level;
  if (e.aux != 0) t.last_level = static_cast<uint8_t>(e.aux);
  // Fast path: re-executed or skipped (unsigned: an entry before the exit's RIP wraps past it).
  if (e.rip - s.rip > kMaxInsnBytes && !Resumes(s, e, t, exit_level)) {
    EmitUntimed(t);
    diagnostics_->Bump(DiagId::kPairResumeMismatch);
    return;
  }
  const bool hlt = IsHlt(s.isa, s.reason) && !t.wfe;
  if (t.silence_at_exit != counts_.silences && !s.to_userspace && !hlt && !t.woken) {
    EmitUntimed(t);
    diagnostics_->Bump(DiagId::kPairExitAcrossSilence);
    return;
  }
  t.has_open = false;
  s.entry_cpu = e.cpu;
  s.dur_ns = e.ts_ns - s.ts_ns;
  if (t.woken) {
    s.blocked_ns = std::min(s.blocked_ns, s.dur_ns);
  } else if (hlt && !s.to_userspace) {
    s.blocked_ns = s.dur_ns;
    ++blocked_assumed_;  // a third of all exits on idle guests: bumped once, in Finish
  } else {
    s.blocked_ns = 0;
  }
  if (s.vcpu_id < 0) s.vcpu_id = e.vcpu_id;
  if (s.entry_cpu != s.exit_cpu) {
    diagnostics_->Bump(DiagId::kPairCpuMigration);
  }
  ++counts_.paired;
  sink_->OnExitSample(s);
}

bool ExitPairer::Resumes(const ExitSample& s, const KvmEvent& e, const ThreadState& t, uint8_t exit_level) {
  // The SIPI vector's CS:0 is also what an entry without a rip field reads.
  if (e.rip == kSipiRip || e.rip == kResetRip) return true;
  if (s.to_userspace || t.emulated || MovesRip(s.isa, s.reason)) return true;
  if (e.aux != 0 && exit_level != 0) {
    if (e.aux != exit_level) return true;  // L1 <-> L2: the other level's RIP
  } else if (t.nested) {
    ++resume_unchecked_;
    return true;
  }
  return false;
}

void ExitPairer::OnWakeup(const KvmEvent& e, ThreadState& t) {
  ++counts_.wakeups;
  if (!e.aux) ++counts_.wakeups_polled;
  if (!e.write) ++counts_.wakeups_invalid;
  if (!t.has_open) return;  // the halt began before the trace's first exit of the thread
  t.woken = true;
  t.open.blocked_ns += e.info1;
}

void ExitPairer::OnDetail(const KvmEvent& e, ThreadState& t) {
  if (e.kind == EventKind::kUserspaceExit)
    ++counts_.userspace_exits;
  else if (e.kind == EventKind::kEmulateInsn)
    t.emulated = true;
  else if (e.kind == EventKind::kWfx)
    t.wfe = e.aux != 0;
  if (!t.has_open) {
    diagnostics_->Bump(DiagId::kPairDetailOutsideExit);
    return;
  }
  ExitSample& s = t.open;
  if (e.kind == EventKind::kUserspaceExit && !s.to_userspace) {
    s.to_userspace = true;
    s.userspace_reason = e.reason;
  }
  if (s.detail_count == ExitSample::kMaxDetails) {
    if (s.details_dropped++ == 0) {
      diagnostics_->Bump(DiagId::kPairDetailsTruncated);
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
    case EventKind::kHvcArm64: d.aux = static_cast<uint32_t>(e.info2); break;  // the HVC immediate
    case EventKind::kWfx: d.key = e.aux; break;                                // is_wfe
    default: break;
  }
}

void ExitPairer::Finish() {
  if (blocked_assumed_) {
    diagnostics_->Bump(DiagId::kPairHltBlockedWithoutWakeup, blocked_assumed_);
    blocked_assumed_ = 0;
  }
  if (resume_unchecked_) {
    diagnostics_->Bump(DiagId::kPairResumeNotCheckedNested, resume_unchecked_);
    resume_unchecked_ = 0;
  }
  uint64_t final_open = 0;
  for (auto& [tid, t] : threads_) {
    if (!t.has_open) continue;
    EmitUntimed(t);
    ++final_open;
  }
  if (counts_.entries == 0 && counts_.exits != 0) {
    // Recorded with kvm_exit only (a common way to record): nothing was lost, there is nothing to time.
    diagnostics_->Bump(DiagId::kPairEntryNotRecorded, counts_.exits);
    lost_entry_before_any_entry_ = 0;
    exit_before_any_entry_ = 0;
    return;
  }
  if (final_open) {
    diagnostics_->Bump(DiagId::kPairFinalExit, final_open);
  }
}

}  // namespace exitscope
