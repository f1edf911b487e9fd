// The advisor's input: each VM exit with its handling time and what KVM did while handling it (MSR
// index, port, MMIO address, a trip to the VMM, a page fault). Rules read only this, so they can be
// unit-tested on synthetic exits and fed from any source.
// In: KvmEvents in time order (any reader), paired by analysis/exit_pairer (the same ExitSamples and
// diagnostics as `report`). Out: AdvisedExits in exit-time order plus totals — the untimed exits too
// (entry lost or never recorded: a kvm_exit-only capture still has counts, rates and RIPs to advise on).
// Assumption: kvm_exit … kvm_entry on one host thread bracket one exit; the kvm events between them on
// that thread (kvm_msr, kvm_pio, kvm_mmio, kvm_userspace_exit, kvm_page_fault, kvm_apic) belong to it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "decode/exit_reason_codes.h"
#include "analysis/exit_driver.h"
#include "analysis/exit_pairer.h"
#include "analysis/vm_grouper.h"
#include "model/diagnostics.h"
#include "model/kvm_event.h"
#include "model/trace_meta.h"
#include "model/event_source.h"

namespace exitscope {

struct AdvisedExit {
  uint64_t ts_ns = 0;        // kvm_exit
  bool timed = true;         // paired with its kvm_entry; untimed exits have dur_ns = handling_ns = 0
  uint64_t dur_ns = 0;       // kvm_exit → next kvm_entry on the same thread (HLT: the sleep's length)
  uint64_t handling_ns = 0;  // dur_ns minus the time the vCPU was blocked: what costs and shares use
  int64_t vm = -1;           // VM id (analysis/vm_grouper.h VmId: the VMM process when known)
  int32_t tid = -1;          // host vCPU thread
  int32_t vcpu = -1;
  int32_t cpu = -1;
  Isa isa = Isa::kUnknown;
  uint32_t reason = 0;
  ExitClass exit_class = ExitClass::kOther;
  uint64_t rip = 0, info1 = 0, info2 = 0;
  // What the handling showed (set when the trace has those events).
  bool has_msr = false, msr_write = false;
  uint32_t msr = 0;
  bool has_pio = false, pio_write = false;
  uint32_t port = 0;
  bool has_mmio = false, mmio_write = false, fast_mmio = false;
  uint64_t gpa = 0;
  bool userspace = false;  // kvm_userspace_exit: KVM_RUN returned to the VMM
  uint32_t userspace_reason = 0;
  bool page_fault = false;
  uint64_t fault_addr = 0;
  bool has_apic = false, apic_write = false;
  uint32_t apic_reg = 0;
  // arm64: the trapped system register (kvm_sys_access, or kvm_handle_sys_reg's ESR), a WFE.
  bool has_sysreg = false, sysreg_write = false;
  uint32_t sysreg = 0;  // sys_reg() encoding (decode/arm64_exit_codes.h)
  bool wfe = false;
};

// One host vCPU thread's exits, for rates per thread (not diluted over the other vCPUs and VMs).
struct ThreadActivity {
  int32_t vcpu = -1;
  uint64_t exits = 0;
  uint64_t first_ts_ns = 0, last_ts_ns = 0;  // its first exit, its last exit's end
  uint64_t SpanNs() const { return last_ts_ns > first_ts_ns ? last_ts_ns - first_ts_ns : 0; }
};

struct ExitProfile {
  std::vector<AdvisedExit> exits;  // by exit time, timed and untimed
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
  ExitRun run;  // what the driver saw (CollectExits), for the context block
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
  ExitCollector(const TraceMeta* meta, Diagnostics* diagnostics)
      : meta_(meta), diagnostics_(diagnostics), pairer_(*meta, diagnostics, this), vms_(*meta) {}
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
  const TraceMeta* meta_;
  const Diagnostics* diagnostics_;
  ExitPairer pairer_;
  VmGrouper vms_;
  std::unordered_map<int32_t, ApicAccess> apic_;
  ExitProfile profile_;
};

// Sets profile->partial from the data-loss / error counters (Diagnostics::HasDataLoss, the rule that
// makes `report` say PARTIAL and exit 65).
void MarkPartial(const Diagnostics& diagnostics, ExitProfile* profile);

// Reads a whole source into a profile.
ExitProfile CollectExits(KvmEventSource* source);

}  // namespace exitscope
