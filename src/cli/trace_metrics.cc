#include "cli/trace_metrics.h"

#include "analysis/exit_driver.h"
#include "analysis/vm_grouper.h"
#include "pipeline/input_detector.h"
#include "pipeline/tracedat_slices.h"

namespace exitscope {

namespace {

// A thread's VM and vCPU names as report --by vm names them, from the source being read.
ExitVmName NameThread(const TraceMeta& meta, const VmGrouper& vms, int32_t tid, int32_t vcpu_id) {
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
    if (auto c = meta.comm_by_tid.find(p->second); c != meta.comm_by_tid.end()) n.vmm = IdentifyVmm({}, c->second).vmm;
  }
  return n;
}

// One pass of `source` into fresh metrics; the pairer's counters into *pair_diag.
std::unique_ptr<ExitMetrics> ReadMetrics(KvmEventSource& source, Diagnostics* pair_diag) {
  const TraceMeta& meta = source.meta();
  VmGrouper vms(meta);
  auto metrics =
      std::make_unique<ExitMetrics>([&](int32_t tid, int32_t vcpu_id) { return NameThread(meta, vms, tid, vcpu_id); });
  DriveOptions options;
  ExitMetrics* m = metrics.get();
  options.on_lost = [m](const LostEvents& l) { m->OnLost(l); };
  DriveExits(source, m, pair_diag, options);
  m->ForgetThreads();  // the namer refers to this source and grouper, which go now
  return metrics;
}

}  // namespace

Result<TraceMetrics> MetricsOfTrace(const std::string& path, const ClockOptions& clock, unsigned threads) {
  auto source = OpenKvmEventSource(path, InputFormat::kAuto, threads, clock);
  if (!source.ok()) return source.error();
  TraceMetrics out;
  Diagnostics pair_diag;
  Status read = ReadWithSequentialFallback(
      &source.value(), path, InputFormat::kAuto,
      [&](KvmEventSource& src) {
        pair_diag = Diagnostics{};
        out.metrics = ReadMetrics(src, &pair_diag);
      },
      clock);
  if (!read.ok()) return read.error();
  // The source's diagnostics after the whole read (parallel decoders merge theirs at the end).
  Diagnostics all = (*source)->diagnostics();
  all.Merge(pair_diag);
  out.diagnostics = all.NonZero();
  out.partial = all.HasDataLoss();
  return out;
}

}  // namespace exitscope
