#include "analysis/report_pipeline.h"

#include <algorithm>
#include <fmt/format.h>

#include "decode/exit_reasons.h"

namespace exitscope {

std::string FilterSummary(const ReportOptions& o, Isa isa) {
  std::string s;
  auto add = [&](std::string part) { s += (s.empty() ? "" : ", ") + part; };
  if (o.pid) add(fmt::format("pid {}", *o.pid));
  if (o.vcpu) add(fmt::format("vcpu {}", *o.vcpu));
  if (o.reason) {
    // Say what the spelling selected in this trace's ISA ("npf" on VMX = EPT_VIOLATION).
    std::string names;
    const ReasonCodes codes = ReasonCodesFromName(*o.reason);
    for (uint32_t code : codes.of(isa)) {
      std::string n = ExitReasonName(isa, code);
      if (n != *o.reason) names += (names.empty() ? "" : " + ") + n;
    }
    add(names.empty() || isa == Isa::kUnknown ? fmt::format("reason {}", *o.reason)
                                              : fmt::format("reason {} (= {})", *o.reason, names));
  }
  if (o.from_s || o.to_s)
    add(fmt::format("time {}s..{}", o.from_s.value_or(0), o.to_s ? fmt::format("{}s", *o.to_s) : "end"));
  return s;
}

ReportContext BuildContext(const TraceMeta& meta, const ExitRun& run) {
  ReportContext c;
  c.source = meta.source_path;
  c.format = meta.source_format;
  c.kernel = meta.kernel;
  c.clock = meta.clock;
  c.cpu_description = meta.cpu_description;
  c.isa = std::string(IsaName(run.isa_seen != Isa::kUnknown ? run.isa_seen : meta.isa_hint));
  c.cpu_count = meta.cpu_count;
  // The span covers every record, not only kvm events: a trace of other events has a duration too.
  uint64_t first_ts = run.first_ts_ns, last_ts = run.last_ts_ns;
  if (meta.first_ts_ns || meta.last_ts_ns) {
    first_ts = run.events ? std::min(first_ts, meta.first_ts_ns) : meta.first_ts_ns;
    last_ts = std::max(last_ts, meta.last_ts_ns);
  }
  c.first_ts_ns = first_ts;
  c.last_ts_ns = last_ts;
  c.time_unit = meta.time_unit;
  c.clock_notes = meta.clock_notes;
  return c;
}

Report BuildReport(KvmEventSource& source, const ReportOptions& options, const ProgressFn& progress,
                   const ReportTaps& taps) {
  const TraceMeta& meta = source.meta();
  Diagnostics pair_diag;
  ExitAggregator aggregator(meta, options);
  DriveOptions drive;
  drive.progress = progress;
  for (ExitSampleSink* k : taps.accepted) aggregator.AddAcceptedSink(k);
  drive.tap = taps.events;
  drive.on_start = [&](uint64_t first_ts_ns) {
    aggregator.SetOrigin(first_ts_ns);
    if (taps.on_start) taps.on_start(first_ts_ns);
  };
  ExitRun run = DriveExits(source, &aggregator, &pair_diag, drive);

  Report report;
  report.context = BuildContext(meta, run);
  report.context.filters = FilterSummary(options, run.isa_seen);

  report.totals.events = run.events;
  report.totals.kvm_first_ts_ns = run.first_ts_ns;
  report.totals.kvm_last_ts_ns = run.last_ts_ns;
  // Records that are not kvm events (the decoder and text reader count them): with the kvm events they
  // give the records the file held, so "events" is not mistaken for the file's count.
  report.totals.records = run.events + source.diagnostics().Count(DiagId::kDecodeSkippedEvents);
  report.totals.untimed = run.pairs.untimed;
  report.totals.exits = run.pairs.exits;
  report.totals.entries = run.pairs.entries;
  report.totals.timed = run.pairs.paired;
  const PairerCounts& pc = run.pairs;
  report.totals.userspace_known = pc.userspace_exits != 0;
  report.totals.wakeups = pc.wakeups;
  report.totals.wakeups_polled = pc.wakeups_polled;
  report.totals.wakeups_invalid = pc.wakeups_invalid;
  report.totals.silences = pc.silences;
  report.totals.silence_ns = pc.silence_ns;
  report.totals.timer_irqs = pc.timer_irqs;
  report.totals.vgic_irqs = pc.vgic_irqs;
  aggregator.Fill(&report);

  Diagnostics all = source.diagnostics();
  all.Merge(pair_diag);
  report.diagnostics = all.NonZero();
  report.partial = all.HasDataLoss();
  return report;
}

}  // namespace exitscope
