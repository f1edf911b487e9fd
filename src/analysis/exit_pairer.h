// Pairs each kvm_exit with the next kvm_entry of the same host thread (the vCPU thread) into a timed
// ExitSample carrying the detail events seen on that thread in between (perf kvm stat's pairing).
// In: KvmEvents in time order plus the source's lost-events markers. Out: one ExitSample per pair to a
// sink, every exit that could not be timed to the sink's OnUntimedExit (so exits are counted by reason
// even without kvm_entry), and named Diagnostics for why (see kPair* below).
// Assumptions: a vCPU thread runs one exit at a time, so per-thread state is one open exit; events
// of one thread arrive in time order even when the thread migrates between CPUs. A loss marker
// drops every open exit (its entry may be among the lost events, on any CPU it migrated to).
//
// Only what belongs together is timed. Real captures lose events without any marker (a per-CPU
// stream missing for seconds, a recorder stall), and the next entry of a thread then closes an exit
// that ended long ago. Two checks catch that; a pair failing one is counted by reason, untimed:
//
// 1. Resume check (DiagId::kPairResumeMismatch). kvm_entry records the guest RIP it resumes at (field `rip`,
//    arch/x86/kvm/trace.h, kvm_rip_read at VM entry; older kernels lack it), kvm_exit the RIP it left at
//    (`guest_rip`). KVM either re-executes the exiting instruction (EPT violation/misconfig, external
//    interrupt, NMI, preemption timer, APIC-write trap: entry.rip == exit.rip) or skips it after
//    emulating it (kvm_skip_emulated_instruction, arch/x86/kvm/x86.c: exit.rip < entry.rip <=
//    exit.rip + 15, the longest x86 instruction: MAX_INSN_SIZE, arch/x86/include/asm/insn.h).
//    Injected events do not move it: VM-entry event injection (vmx_inject_irq / svm_inject_irq)
//    vectors in hardware after kvm_entry is traced. Larger moves are legitimate, and not checked, when
//    - the exit reason switches context: task switch (kvm_task_switch loads the new task's EIP:
//      vmx.c handle_task_switch, svm.c task_switch_interception), INIT / SIPI / triple fault /
//      shutdown (the vCPU is reset), VMLAUNCH / VMRESUME / VMRUN (nested entry into L2 at vmcs12 /
//      vmcb12's RIP: vmx/nested.c nested_vmx_run, svm/nested.c nested_svm_vmrun), RSM (leaves SMM),
//      a failed VM entry (VMX reason bit 31; SVM_EXIT_ERR) and SEV-ES's VMGEXIT (guest state is
//      encrypted, guest_rip is not the guest's);
//    - the entry lands on a reset vector: RIP 0xfff0 (kvm_vcpu_reset, x86.c) or 0 (the SIPI vector
//      starts at CS:0, kvm_vcpu_deliver_sipi_vector) — an INIT can arrive while any exit is open;
//    - the exit went to the VMM (a kvm_userspace_exit on the thread in between): while KVM_RUN has
//      returned, the VMM may rewrite RIP (KVM_SET_REGS, kvm_arch_vcpu_ioctl_set_regs);
//    - the emulator ran (a kvm_emulate_insn in between): emulating invalid guest state loops over
//      many instructions (vmx.c handle_invalid_guest_state), and so does real mode without
//      unrestricted guest, which also delivers interrupts by emulation (kvm_inject_realmode_interrupt);
//    - the thread runs a nested hypervisor (it had VMX/SVM instruction exits), unless kvm_entry's
//      guest_mode field says which level each entry resumed: an exit of L2 reflected to L1
//      (nested_vmx_vmexit / nested_svm_vmexit) resumes L1 at its own RIP. Those pairs are counted
//      under DiagId::kPairResumeNotCheckedNested (info).
//    Not detectable from kvm events alone: an SMI entering SMM (enter_smm, RIP = 0x8000) while an
//    exit is open; it is rare (firmware) and would show as a mismatch. An entry without a `rip`
//    field (or a text line without one) reads 0 and is not checked.
// 2. Silence check (DiagId::kPairExitAcrossSilence). When every CPU stops recording for longer than
//    kSilenceNs, an exit that is not a blocking one (HLT: the vCPU waits for an interrupt) and did
//    not go to the VMM is not timed across it: in-kernel handling of any other exit takes micro- to
//    milliseconds, while a quiet host (all vCPUs halted) legitimately records nothing, so a
//    non-blocking exit open across such a silence most likely lost its events in a recording hole.
//    The cost: a vCPU thread preempted that long on an otherwise silent host is not timed either,
//    nor one the VMM held that long when kvm_userspace_exit was not recorded (the counter says how
//    many; sched_switch, not decoded yet, would tell preemption from a hole).
//
// Blocked time (ExitSample::blocked_ns). KVM blocks a halted vCPU in kvm_vcpu_halt
// (virt/kvm/kvm_main.c), which ends with kvm_vcpu_wakeup: ns = time polled plus time waited,
// waited = it scheduled out (else polling succeeded), valid = the wakeup made the vCPU runnable. Where
// kvm_vcpu_wakeup is recorded inside an exit, their ns (capped at dur_ns) are its blocked time,
// whatever the reason. A HLT exit without one is blocked for its whole time (DiagId::kPairHltBlockedWithoutWakeup):
// __kvm_emulate_halt (x86.c) halts the vCPU until an event, the rest is microseconds; unless it went
// to the VMM (no in-kernel irqchip: KVM_EXIT_HLT), where the VMM's handling is the time. MWAIT exits are
// not blocked unless wakeups say so: KVM emulates an intercepted MWAIT as a NOP (kvm_emulate_mwait,
// x86.c). sched_switch (preemption while handling) is not decoded yet, so it is not split out.
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

// A gap in the whole trace's kvm events this long is a silence of every CPU (see the header).
inline constexpr uint64_t kSilenceNs = 100'000'000;
// x86's longest instruction (MAX_INSN_SIZE, arch/x86/include/asm/insn.h); arm64's are 4 bytes.
inline constexpr uint64_t kMaxInsnBytes = 15;

struct PairerCounts {
  uint64_t exits = 0;            // kvm_exit events seen (all)
  uint64_t entries = 0;          // kvm_entry events seen (all)
  uint64_t paired = 0;           // ExitSamples emitted
  uint64_t untimed = 0;          // exits passed to OnUntimedExit
  uint64_t userspace_exits = 0;  // kvm_userspace_exit events seen (the VMM split is known when > 0)
  uint64_t wakeups = 0;          // kvm_vcpu_wakeup events seen
  uint64_t wakeups_polled = 0;   // ... ended by polling (waited = 0)
  uint64_t wakeups_invalid = 0;  // ... spurious (valid = 0)
  uint64_t silences = 0;         // gaps of kSilenceNs or more between consecutive kvm events
  uint64_t silence_ns = 0;       // their summed length
  uint64_t timer_irqs = 0;       // arm64 kvm_timer_update_irq events seen (a timer line changed)
  uint64_t vgic_irqs = 0;        // arm64 vgic_update_irq_pending events seen (an IRQ made pending)
};

class ExitPairer {
 public:
  ExitPairer(const TraceMeta& meta, Diagnostics* diagnostics, ExitSampleSink* sink);
  void OnLost(const LostEvents& lost);
  void OnEvent(const KvmEvent& event);
  // End of input: exits still open are counted (DiagId::kPairFinalExit), never timed.
  void Finish();
  const PairerCounts& counts() const { return counts_; }

 private:
  struct ThreadState {
    ExitSample open;
    bool has_open = false;
    bool seen_entry = false;
    bool expect_orphan_entry = false;  // its exit was dropped (loss / before buffer start)
    bool nested = false;               // the thread ran VMX/SVM instructions: a nested hypervisor
    bool emulated = false;             // a kvm_emulate_insn inside the open exit
    bool woken = false;                // a kvm_vcpu_wakeup inside the open exit
    bool wfe = false;                  // arm64: kvm_wfx_arm64 says the open WFx exit is a WFE (no halt)
    uint8_t last_level = 0;            // kvm_entry guest_mode of the last entry + 1 (0: not recorded)
    uint64_t silence_at_exit = 0;      // counts_.silences when the open exit began
  };
  ThreadState& State(int32_t tid);
  void OnExit(const KvmEvent& e, ThreadState& t);
  void OnEntry(const KvmEvent& e, ThreadState& t);
  void OnFirstEntry();  // the trace's first kvm_entry: what was held back until one came
  void OnEntryWithoutExit(const KvmEvent& e, ThreadState& t, bool first);
  void OnDetail(const KvmEvent& e, ThreadState& t);
  void EmitUntimed(ThreadState& t);
  // The resume check's slow path, for an entry not within one instruction after the exit's RIP:
  // false when it cannot resume the open exit (the header's rules).
  bool Resumes(const ExitSample& s, const KvmEvent& entry, const ThreadState& t, uint8_t exit_level);
  void OnWakeup(const KvmEvent& e, ThreadState& t);

  Diagnostics* diagnostics_;
  ExitSampleSink* sink_;
  uint64_t start_cutoff_ns_ = 0;  // latest per-CPU start of an overwritten buffer
  std::unordered_map<int32_t, ThreadState> threads_;
  int32_t cached_tid_ = -1;
  ThreadState* cached_ = nullptr;
  PairerCounts counts_;
  // Counted while the trace had no entry yet, reported once one shows up: a trace without any
  // kvm_entry (not recorded) gets DiagId::kPairEntryNotRecorded instead.
  uint64_t lost_entry_before_any_entry_ = 0;
  uint64_t exit_before_any_entry_ = 0;
  // Latest kvm event time, for the silence check; starts "in the future" so the first event is no gap.
  uint64_t last_ts_ns_ = UINT64_MAX / 2;
  uint64_t blocked_assumed_ = 0, resume_unchecked_ = 0;  // frequent info counts, bumped in Finish
};

}  // namespace exitscope
