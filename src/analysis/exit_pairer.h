// Pairs each kvm_exit with the next kvm_entry of the same host thread (the vCPU thread) into a timed
// ExitSample carrying the detail events seen on that thread in between (perf kvm stat's pairing).
// In: KvmEvents in time order plus the source's lost-events markers. Out: one ExitSample per pair to a
// sink, every exit that could not be timed to the sink's OnUntimedExit (so exits are counted by reason
// even without kvm_entry), and named Diagnostics for why (see kPair* below).
// Assumptions: a vCPU thread runs one exit at a time, so per-thread state is one open exit; events
// of one thread arrive in time order even when the thread migrates between CPUs. A loss marker
// drops every open exit (its entry may be among the lost events, on any CPU it migrated to).
#pragma once

#include <cstdint>
#include <unordered_map>

#include "model/diagnostics.h"
#include "model/exit_sample.h"
#include "model/trace_meta.h"
#include "model/event_source.h"

namespace exitscope {

class ExitSampleSink {
 public:
  virtual ~ExitSampleSink() = default;
  virtual void OnExitSample(const ExitSample& sample) = 0;
  // An exit that has no time (its entry was lost, never recorded, or came after the trace ended):
  // dur_ns is 0 and details may be partial. Sinks that only want timed exits ignore it.
  virtual void OnUntimedExit(const ExitSample& sample) { (void)sample; }
};

// Diagnostics counter names bumped by the pairer (stable: tests and users grep them).
inline constexpr const char* kPairExitBeforeFirstEntry = "pair.exit_before_first_entry";
inline constexpr const char* kPairFirstEntryWithoutExit = "pair.first_entry_without_exit";
inline constexpr const char* kPairEntryWithoutExit = "pair.entry_without_exit";
inline constexpr const char* kPairLostEntry = "pair.lost_entry";
inline constexpr const char* kPairDroppedByLoss = "pair.exit_dropped_by_lost_events";
inline constexpr const char* kPairCpuMigration = "pair.cpu_migration";
inline constexpr const char* kPairBeforeBufferStart = "pair.exit_before_buffer_start";
inline constexpr const char* kPairFinalExit = "pair.final_exit_without_entry";
inline constexpr const char* kPairDetailOutsideExit = "pair.detail_outside_exit";
inline constexpr const char* kPairDetailsTruncated = "pair.details_truncated";
// The trace has kvm_exit but no kvm_entry at all (recorded with -e kvm:kvm_exit only): not data loss,
// exits are counted untimed; replaces the lost-entry / final-exit counts it would otherwise cause.
inline constexpr const char* kPairEntryNotRecorded = "pair.entry_not_recorded";

struct PairerCounts {
  uint64_t exits = 0;    // kvm_exit events seen (all)
  uint64_t entries = 0;  // kvm_entry events seen (all)
  uint64_t paired = 0;   // ExitSamples emitted
  uint64_t untimed = 0;  // exits passed to OnUntimedExit
};

class ExitPairer {
 public:
  ExitPairer(const TraceMeta& meta, Diagnostics* diagnostics, ExitSampleSink* sink);
  void OnLost(const LostEvents& lost);
  void OnEvent(const KvmEvent& event);
  // End of input: exits still open are counted (kPairFinalExit), never timed.
  void Finish();
  const PairerCounts& counts() const { return counts_; }

 private:
  struct ThreadState {
    ExitSample open;
    bool has_open = false;
    bool seen_entry = false;
    bool expect_orphan_entry = false;  // its exit was dropped (loss / before buffer start)
  };
  ThreadState& State(int32_t tid);
  void OnExit(const KvmEvent& e, ThreadState& t);
  void OnEntry(const KvmEvent& e, ThreadState& t);
  void OnDetail(const KvmEvent& e, ThreadState& t);
  void EmitUntimed(ThreadState& t);

  Diagnostics* diagnostics_;
  ExitSampleSink* sink_;
  uint64_t start_cutoff_ns_ = 0;  // latest per-CPU start of an overwritten buffer
  std::unordered_map<int32_t, ThreadState> threads_;
  int32_t cached_tid_ = -1;
  ThreadState* cached_ = nullptr;
  PairerCounts counts_;
  // Counted while the trace had no entry yet, reported once one shows up: a trace without any
  // kvm_entry (not recorded) gets kPairEntryNotRecorded instead.
  uint64_t lost_entry_before_any_entry_ = 0;
  uint64_t exit_before_any_entry_ = 0;
};

}  // namespace exitscope
