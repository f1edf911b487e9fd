#include "advise/exit_collector.h"

#include <algorithm>

namespace exitscope {
namespace {

// include/trace/events/kvm.h: KVM_TRACE_MMIO_READ_UNSATISFIED 0, _READ 1, _WRITE 2.
constexpr uint32_t kKvmTraceMmioWrite = 2;

}  // namespace

void ExitCollector::Add(const KvmEvent& e) {
  profile_.has_event[static_cast<int>(e.kind)] = true;
  if (profile_.first_ts_ns == 0 || e.ts_ns < profile_.first_ts_ns) profile_.first_ts_ns = e.ts_ns;
  if (e.ts_ns > profile_.last_ts_ns) profile_.last_ts_ns = e.ts_ns;
  Open& o = open_[e.tid];
  switch (e.kind) {
    case EventKind::kExit: {
      if (o.open) {
        diag_->Bump("advise.exit_without_entry", Severity::kDataLoss,
                    "kvm_exit followed by another kvm_exit on the same thread (entry lost)");
      }
      o = Open{};
      o.open = true;
      AdvisedExit& x = o.exit;
      x.ts_ns = e.ts_ns;
      x.tid = e.tid;
      x.cpu = e.cpu;
      x.vcpu = e.vcpu_id;
      x.isa = e.isa != Isa::kUnknown ? e.isa : meta_->isa_hint;
      x.reason = e.reason;
      x.exit_class = ClassifyExit(x.isa, e.reason);
      x.rip = e.rip;
      x.info1 = e.info1;
      x.info2 = e.info2;
      auto tg = meta_->tgid_by_tid.find(e.tid);
      x.vm = tg != meta_->tgid_by_tid.end() ? tg->second : -1;
      if (x.vm < 0) {
        for (const auto& g : meta_->guests) {
          for (const auto& [vcpu, tid] : g.vcpu_to_host_tid) {
            if (tid == e.tid) {
              x.vm = static_cast<int32_t>(g.trace_id);
              if (x.vcpu < 0) x.vcpu = vcpu;
            }
          }
        }
      }
      return;
    }
    case EventKind::kEntry: {
      if (!o.open) return;  // the trace started mid-exit
      o.exit.dur_ns = e.ts_ns >= o.exit.ts_ns ? e.ts_ns - o.exit.ts_ns : 0;
      if (o.exit.userspace && e.ts_ns >= o.userspace_ts_ns) o.exit.userspace_ns = e.ts_ns - o.userspace_ts_ns;
      profile_.total_exit_ns += o.exit.dur_ns;
      profile_.exits.push_back(o.exit);
      o.open = false;
      return;
    }
    default:
      break;
  }
  if (!o.open) return;
  AdvisedExit& x = o.exit;
  switch (e.kind) {
    case EventKind::kMsr:
      x.has_msr = true;
      x.msr = static_cast<uint32_t>(e.info1);
      x.msr_write = e.write;
      break;
    case EventKind::kPio:
      x.has_pio = true;
      x.port = static_cast<uint32_t>(e.info1);
      x.pio_write = e.write;
      break;
    case EventKind::kMmio:
      x.has_mmio = true;
      x.gpa = e.info1;
      x.mmio_write = e.write || e.aux == kKvmTraceMmioWrite;
      break;
    case EventKind::kFastMmio:
      x.has_mmio = x.fast_mmio = x.mmio_write = true;
      x.gpa = e.info1;
      break;
    case EventKind::kUserspaceExit:
      x.userspace = true;
      x.userspace_reason = e.reason;
      o.userspace_ts_ns = e.ts_ns;
      break;
    case EventKind::kPageFault:
      x.page_fault = true;
      x.fault_addr = e.info1;
      break;
    case EventKind::kApic:
      x.has_apic = true;
      x.apic_write = e.write;
      x.apic_reg = e.aux;
      break;
    default:
      break;
  }
}

void ExitCollector::Lost(const LostEvents& lost) {
  // An exit open on that CPU may have lost its entry: drop it rather than report an endless exit.
  for (auto& [tid, o] : open_) {
    if (o.open && o.exit.cpu == lost.cpu) {
      o.open = false;
      diag_->Bump("advise.exit_dropped_at_loss", Severity::kDataLoss, "open exit dropped at a lost-events mark");
    }
  }
}

ExitProfile ExitCollector::Finish() {
  for (const auto& [tid, o] : open_) {
    if (o.open) diag_->Bump("advise.exit_open_at_end", Severity::kInfo, "exit still open when the trace ended");
  }
  for (const auto& [tid, comm] : meta_->comm_by_tid) profile_.vm_names[tid] = comm;
  std::stable_sort(profile_.exits.begin(), profile_.exits.end(),
                   [](const AdvisedExit& a, const AdvisedExit& b) { return a.ts_ns < b.ts_ns; });
  return std::move(profile_);
}

ExitProfile CollectExits(KvmEventSource* source) {
  ExitCollector c(&source->meta(), &source->diagnostics());
  KvmEvent e;
  LostEvents lost;
  while (true) {
    lost = LostEvents{};
    if (!source->Next(&e, &lost)) break;
    if (lost.cpu >= 0) c.Lost(lost);
    c.Add(e);
  }
  return c.Finish();
}

}  // namespace exitscope
