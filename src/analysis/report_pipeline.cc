#include "analysis/report_pipeline.h"

#include <fmt/format.h>

#include "analysis/exit_pairer.h"
#include "decode/exit_reasons.h"

namespace exitscope {
namespace {

constexpr uint64_t kProgressEvery = 1 << 18;  // events between progress callbacks
// Bumped by the kvm decoder and the text reader for records that are not kvm events: with the kvm
// events read it gives the records the file held, so "events" is not mistaken for the file's count.
constexpr const char* kSkippedRecords = "decode.skipped_events";

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

}  // namespace

Report BuildReport(KvmEventSource& source, const ReportOptions& options, const ProgressFn& progress) {
  const TraceMeta& meta = source.meta();
  Diagnostics pair_diag;
  ExitAggregator aggregator(meta, options);
  ExitPairer pairer(meta, &pair_diag, &aggregator);

  Report report;
  KvmEventBatch batch;
  uint64_t events = 0, first_ts = 0, last_ts = 0, next_progress = kProgressEvery;
  Isa isa_seen = Isa::kUnknown;
  while (source.NextBatch(&batch)) {
    if (events == 0) {
      first_ts = batch.events.front().ts_ns;
      aggregator.SetOrigin(first_ts);
    }
    ForEachEvent(batch, [&](const KvmEvent& e, const LostEvents* lost) {
      if (lost) pairer.OnLost(*lost);
      if (e.kind == EventKind::kExit && isa_seen == Isa::kUnknown) isa_seen = e.isa;
      pairer.OnEvent(e);
    });
    events += batch.events.size();
    last_ts = batch.events.back().ts_ns;
    if (progress && events >= next_progress) {
      progress(source.bytes_done(), source.bytes_total());
      next_progress = events + kProgressEvery;
    }
  }
  pairer.Finish();

  ReportContext& c = report.context;
  c.source = meta.source_path;
  c.format = meta.source_format;
  c.kernel = meta.kernel;
  c.clock = meta.clock;
  c.cpu_description = meta.cpu_description;
  c.isa = std::string(IsaName(isa_seen != Isa::kUnknown ? isa_seen : meta.isa_hint));
  c.cpu_count = meta.cpu_count;
  c.first_ts_ns = first_ts;
  c.last_ts_ns = last_ts;
  c.filters = FilterSummary(options, isa_seen);

  report.totals.events = events;
  report.totals.records = events + source.diagnostics().Count(kSkippedRecords);
  report.totals.untimed = pairer.counts().untimed;
  report.totals.exits = pairer.counts().exits;
  report.totals.entries = pairer.counts().entries;
  report.totals.timed = pairer.counts().paired;
  aggregator.Fill(&report);

  Diagnostics all = source.diagnostics();
  all.Merge(pair_diag);
  report.diagnostics = all.NonZero();
  report.partial = all.HasDataLoss();
  return report;
}

}  // namespace exitscope
