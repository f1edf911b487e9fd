#include "cli/trace_metrics.h"

#include "analysis/exit_driver.h"
#include "analysis/vm_grouper.h"
#include "pipeline/input_detector.h"

namespace exitscope {

Result<TraceMetrics> MetricsOfTrace(const std::string& path, const ClockOptions& clock) {
  auto source = OpenKvmEventSource(path, InputFormat::kAuto, 1, clock);
  if (!source.ok()) return source.error();
  const TraceMeta& meta = (*source)->meta();
  VmGrouper vms(meta);
  TraceMetrics out;
  out.metrics = std::make_unique<ExitMetrics>([&](int32_t tid, int32_t vcpu_id) {
    ExitVmName n;
    n.domain = vms.FrameLabel(tid);
    n.vcpu = vms.VcpuIndex(tid, vcpu_id).value_or(-1);
    if (auto c = meta.comm_by_tid.find(tid); c != meta.comm_by_tid.end()) {
      std::string_view vmm;
      if (VcpuIndexFromThreadName(c->second, &vmm)) n.vmm = vmm;
    }
    // exitscope record's GUEST option: the uuid and VMM it found on the live host.
    if (const GuestInfo* g = vms.Guest(tid)) {
      n.uuid = g->uuid;
      if (!g->vmm.empty()) n.vmm = g->vmm;
    }
    // exitscope record maps threads to their VMM process: its name says which VMM it is.
    if (auto p = meta.tgid_by_tid.find(tid); n.vmm.empty() && p != meta.tgid_by_tid.end()) {
      if (auto c = meta.comm_by_tid.find(p->second); c != meta.comm_by_tid.end())
        n.vmm = IdentifyVmm({}, c->second).vmm;
    }
    return n;
  });
  Diagnostics pair_diag;
  DriveOptions options;
  ExitMetrics* m = out.metrics.get();
  options.on_lost = [m](const LostEvents& l) { m->OnLost(l); };
  DriveExits(**source, m, &pair_diag, options);
  m->ForgetThreads();  // the namer refers to this source, which goes now
  Diagnostics all = (*source)->diagnostics();
  all.Merge(pair_diag);
  out.diagnostics = all.NonZero();
  out.partial = all.HasDataLoss();
  return out;
}

}  // namespace exitscope
