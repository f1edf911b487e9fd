// `exitscope report FILE`: per-exit-reason statistics of a kvm trace, grouped and filtered, as text
// or JSON. Exit status: 0 clean, 65 when the result is partial (data-loss/error diagnostics), other
// sysexits codes for operational failures (see base/result.h). The help teaches what PARTIAL means.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <unistd.h>

#include "analysis/report_pipeline.h"
#include "cli/command.h"
#include "cli/filter_options.h"
#include "cli/html_report.h"
#include "cli/rip_report.h"
#include "cli/trace_metrics.h"
#include "report/openmetrics_reporter.h"
#include "report/csv_reporter.h"
#include "report/histogram_reporter.h"
#include "report/json_reporter.h"
#include "report/text_reporter.h"
#include "pipeline/tracedat_slices.h"
#include "pipeline/input_detector.h"

namespace exitscope {
namespace {

constexpr const char* kReportHelp = R"(Per exit reason: how many VM exits, how much host time they took, and how that
time is distributed (min / mean / p50 / p90 / p99 / p99.9 / max). An exit's time runs
from kvm_exit to the next kvm_entry of the same vCPU thread (as `perf kvm stat`).
COUNT is every kvm_exit; the time columns cover the exits that have a time. UNTIMED (shown
when some have none) counts exits whose kvm_entry is missing: lost, not recorded (a trace
recorded with only kvm_exit is counted, not timed), or after the end of the trace, and exits
whose pair does not hold together: the next entry resumed the guest elsewhere than the exit's
instruction (pair.resume_mismatch), or a non-halt exit spans a silence of every CPU of 100 ms or
more (pair.exit_across_silence) — events were lost there, a time across the gap would be false.

Handling, not waiting: TOTAL, %TIME and MIN..MAX are the time the host spent on the exit; the
time a halted vCPU (HLT) waited for work is BLOCKED, shown apart. Where kvm:kvm_vcpu_wakeup is
recorded it gives each halt's polled and waited time; without it a HLT exit's whole time is
blocked (pair.hlt_blocked_without_wakeup says how many). TO VMM (exits that went to the VMM,
with the in-kernel / VMM split lines) needs kvm:kvm_userspace_exit in the trace; without it the
split is unknown and not shown.

arm64 hosts: exits are named as `perf kvm stat` names them there (a TRAP by its exception class:
SYS64, DABT_LOW, HVC64, WFx …; else IRQ, SERROR, ILLEGAL, HYP_GONE) and timed the same way,
kvm_exit -> next kvm_entry; a WFI's wait is BLOCKED as HLT's. perf kvm stat on arm64 measures
the other interval, kvm_entry -> kvm_exit (guest run time, keyed by the exit ending it;
tools/perf/arch/arm64/util/kvm-stat.c): its times are not ours to compare, its counts are.)";

constexpr const char* kReportInputsText =
    ";\nor trace text from `trace-cmd report`, `perf script` or tracefs's trace file (also .gz).";

constexpr const char* kReportExamples = R"(Record a trace first, while the guest does what you want to measure:
  exitscope record -o trace.dat --duration 10      # -> trace.dat (root)
  trace-cmd record -e kvm -- sleep 10               # -> trace.dat
  perf record -e 'kvm:*' -a -- sleep 10             # -> perf.data

Examples:
  exitscope report trace.dat                        # table per exit reason
  exitscope report --by vcpu trace.dat              # one table per vCPU thread
  exitscope report --by vm --top 5 trace.dat        # top 5 reasons of each VM
  exitscope report --reason EPT_VIOLATION trace.dat # only one reason (any spelling: npf, EXIT_NPF)
  exitscope report --pid 4242 --from 2 --to 5 trace.dat   # one VM, seconds 2..5 of the trace
  exitscope report --json trace.dat | jq '.groups[0].reasons[0]'
  exitscope report --openmetrics trace.dat > /var/lib/node_exporter/exits.prom   # textfile collector
  exitscope report --csv --by vcpu trace.dat > exits.csv   # one row per vCPU thread x reason
  exitscope report --histogram HLT trace.dat        # HLT's latency on log buckets, p50/p99 marked
  exitscope report --by rip --guest-kallsyms guest-kallsyms.txt trace.dat   # which guest code exits
  exitscope report --folded exits.folded trace.dat   # flamegraph.pl exits.folded > exits.svg
  exitscope report --html report.html trace.dat     # one page: charts, flame graph, tables (offline)
  trace-cmd report trace.dat > t.txt && exitscope report t.txt   # text works too
  exitscope report --tsc-khz 2399998 tsc.dat        # recorded with trace-cmd record -C x86-tsc

Clocks: local, global, perf, mono, mono_raw, boot, tai and trace-cmd's tsc2nsec (TSC2NSEC option)
give ns. x86-tsc without a TSC2NSEC option gives TSC cycles: the report says so and prints "cyc"
until --tsc-khz converts them. counter counts events (no time: "cnt"); uptime ticks in 10 ms
jiffies (converted, with a warning). TIME_SHIFT (guest clock sync) is not applied: the report says so.

VMs: by host process when the trace records it (perf.data); else by trace-cmd's GUEST option
(name and vCPU -> thread map), else QEMU "CPU n/KVM" threads with consecutive tids are grouped
and the label says the process was not recorded.

Detail breakdowns (MSR index, I/O port, MMIO GPA, CR, hypercall, KVM_EXIT_* of exits that
went to the VMM) appear when the trace holds kvm_msr / kvm_pio / kvm_mmio / kvm_cr /
kvm_hypercall / kvm_userspace_exit events (`-e kvm` records them all). kvm_exit alone
already gives, from its exit qualification / exit_info and intr_info: the APIC register of
APIC_WRITE / APIC_ACCESS / AVIC exits (TMICT, ICR, EOI …; kvm_apic when recorded), the access
of EPT violations / NPFs (GPA from kvm_page_fault or NPF exit_info2), exception and interrupt
vectors (#PF, NMI, the host's LOCAL_TIMER …), the DR of MOV DR exits, and the CR and port of
CR / I/O exits where kvm_cr / kvm_pio were not recorded. Their COUNT covers untimed exits too.)";

constexpr const char* kReportExitStatus =
    "Exit status: 0 complete; 65 PARTIAL (report printed) or unreadable data; 64 bad option (the\n"
    "hint names the valid values; also a --reason the trace's ISA has no equivalent of); 66 input\n"
    "missing or a directory; 74 I/O error; 77 permission denied.";

// What the command line gave, bound to the options before parsing.
struct ReportArgs {
  std::string path, by = "reason", input_format = "auto";
  ReportOptions options;
  bool json = false;
  FilterArgs filter_args;
  RipReportArgs rip_args;
  std::string html_out;
  bool openmetrics = false;
  std::string exposition = "text";
  bool csv = false;
  std::string histogram;
  unsigned threads = 0;
  ClockOptions clock;
};

void DeclareReportOptions(CLI::App& app, ReportArgs* a) {
  app.add_option("FILE", a->path, "trace.dat, perf.data or trace text (see Inputs below)")->required();
  app.add_option("--by", a->by, "group by: reason (default), vm, vcpu, cpu, rip (top guest RIPs per reason)")
      ->check(CLI::IsMember({"reason", "vm", "vcpu", "cpu", "rip"}));
  AddRipReportOptions(app, &a->rip_args);
  AddFilterOptions(app, &a->filter_args, kFilterPid | kFilterVcpu | kFilterReason | kFilterWindow | kFilterTop,
                   "show only the N (>= 1) reasons with most exits per group (--by rip: RIPs per reason)");
  app.add_flag("--json", a->json, "one JSON object (schema exitscope.report/3) instead of tables");
  app.add_option("--html", a->html_out,
                 "write one self-contained HTML page to OUT (- = stdout): the tables, latency distributions, "
                 "exits/s per vCPU over time, a flame graph of guest code; no network needed to view it")
      ->option_text("OUT");
  app.add_flag("--openmetrics", a->openmetrics,
               "the trace's totals as the metrics `exitscope serve` exports, in the Prometheus text format "
               "node_exporter's textfile collector reads (--exposition openmetrics: OpenMetrics 1.0.0)");
  app.add_option("--exposition", a->exposition, "with --openmetrics: text (default) or openmetrics")
      ->check(CLI::IsMember({"text", "openmetrics"}));
  app.add_flag("--csv", a->csv,
               "CSV instead of tables: a header row, then one row per group x exit reason with every column "
               "(RFC 4180; --by respected; times in the trace's unit, empty = unknown)");
  app.add_option("--histogram", a->histogram,
                 "draw the handling-time histogram of this exit reason (any spelling) on log buckets, p50 and "
                 "p99 marked, per group of --by");
  app.add_flag("--details,!--no-details", a->options.details, "MSR/port/MMIO/… breakdowns (default on)");
  app.add_option("-j,--threads", a->threads, kThreadsHelp);
  AddClockOptions(app, &a->clock);
  app.add_option("--input-format,--format", a->input_format,
                 "auto (default: by content), tracedat, perfdata (or perf), text")
      ->check(CLI::IsMember({"auto", "tracedat", "perf", "perfdata", "text"}));
}

// One output form at a time; --openmetrics takes no filter.
Status CheckOutputForm(const ReportArgs& a) {
  if (int outputs = a.json + a.csv + !a.histogram.empty() + !a.html_out.empty() + a.openmetrics; outputs > 1) {
    return MakeError(kExitUsage, "cli.conflicting-options",
                     "--json, --csv, --histogram, --html and --openmetrics exclude each other",
                     "give one output form: --json (the whole report), --csv (the reason rows), "
                     "--histogram REASON (one reason's latency), --html OUT (one page) or "
                     "--openmetrics (the metrics of `exitscope serve`)");
  }
  const FilterArgs& f = a.filter_args;
  if (a.openmetrics && (!f.pid.empty() || !f.vcpu.empty() || !f.reason.empty() || !f.from.empty() || !f.to.empty() ||
                        a.by != "reason")) {
    // The exposition is the trace's totals, as `serve --from-trace` serves them: a filter would be
    // ignored in silence.
    return MakeError(kExitUsage, "cli.conflicting-options",
                     "--openmetrics exports the whole trace: --by, --pid, --vcpu, --reason, --from "
                     "and --to do not apply to it",
                     "drop them, or use --json / --csv for a filtered report");
  }
  return {};
}

int RunOpenMetricsReport(const ReportArgs& a) {
  auto tm = MetricsOfTrace(a.path, a.clock, DecodeThreads(a.threads));
  if (!tm.ok()) return PrintError(tm.error());
  ExpositionOptions o;
  o.format = a.exposition == "openmetrics" ? ExpositionFormat::kOpenMetrics : ExpositionFormat::kPrometheusText;
  WriteStdout(RenderExposition(*tm->metrics, tm->diagnostics, nullptr, o));
  return FinishStdout(tm->partial ? kExitDataErr : kExitOk);
}

// --by and the filters into a->options; the reason --histogram draws into *histogram_filter.
Result<Filters> ResolveFilters(ReportArgs* a, Filters* histogram_filter) {
  ReportOptions& options = a->options;
  options.by = a->by == "vm"     ? GroupBy::kVm
               : a->by == "vcpu" ? GroupBy::kVcpu
               : a->by == "cpu"  ? GroupBy::kCpu
                                 : GroupBy::kReason;
  auto filters = ParseFilters(a->filter_args);
  if (!filters.ok()) return filters.error();
  SelectByFilters(*filters, &options);
  options.top = filters->top;
  if (!filters->reason.empty()) options.reason = filters->reason;
  if (!a->histogram.empty()) {
    FilterArgs h;
    h.reason = a->histogram;
    auto parsed = ParseFilters(h);
    if (!parsed.ok()) {
      Error e = parsed.error();
      e.message = "--histogram: " + e.message;
      return e;
    }
    *histogram_filter = *parsed;
    options.histograms = true;
  }
  return filters;
}

InputFormat InputFormatFromName(const std::string& name) {
  return name == "tracedat"                     ? InputFormat::kTraceDat
         : name == "perf" || name == "perfdata" ? InputFormat::kPerfData
         : name == "text"                       ? InputFormat::kText
                                                : InputFormat::kAuto;
}

Isa IsaFromName(const std::string& name) {
  return name == "vmx" ? Isa::kVmx : name == "svm" ? Isa::kSvm : name == "arm64" ? Isa::kArm64 : Isa::kUnknown;
}

// The report of the reason table (text, JSON, CSV or one reason's histogram).
int RunTableReport(const ReportArgs& a, InputFormat fmt, const Filters& filters, const Filters& histogram_filter) {
  const ReportOptions& options = a.options;
  auto source = OpenKvmEventSource(a.path, fmt, DecodeThreads(a.threads), a.clock);
  if (!source.ok()) return PrintError(source.error());
  // The window is in seconds: a trace in TSC cycles or counts cannot place it.
  if (options.from_s || options.to_s) {
    if (Status st = RequireNsClock((*source)->meta(), "--from/--to"); !st.ok()) return PrintError(st.error());
  }

  bool tty = isatty(fileno(stderr));
  ProgressFn progress;
  if (tty) progress = PrintProgress;
  Report report;
  Status read = ReadWithSequentialFallback(
      &source.value(), a.path, fmt, [&](KvmEventSource& src) { report = BuildReport(src, options, progress); },
      a.clock);
  if (!read.ok()) return PrintError(read.error());
  if (tty && (*source)->bytes_total()) ClearProgress();
  Isa isa = IsaFromName(report.context.isa);
  if (Status st = CheckReasonForIsa(filters, isa); !st.ok()) return PrintError(st.error());
  if (Status st = CheckReasonForIsa(histogram_filter, isa); !st.ok()) return PrintError(st.error());

  std::string out;
  if (a.json) {
    out = RenderJsonReport(report);
  } else if (a.csv) {
    out = RenderCsvReport(report);
  } else if (!a.histogram.empty()) {
    out = RenderTextHistogram(
        report, [&](const ReasonRow& row) { return histogram_filter.reason_codes.Matches(row.isa, row.code); },
        a.histogram);
  } else {
    out = RenderTextReport(report, TextReportOptions{options.details});
  }
  WriteStdout(out);
  return FinishStdout(report.partial ? kExitDataErr : kExitOk);
}

}  // namespace

int RunReportCommand(int argc, char** argv) {
  CLI::App app{"exitscope report: where VMs lose time to exits, per exit reason", "exitscope report"};
  app.footer(std::string(kReportHelp) + "\n\n" + kHelpInputs + kReportInputsText + "\n\n" + kReportExamples + "\n\n" +
             kHelpPartial + "\n\n" + kReportExitStatus);
  ReportArgs a;
  DeclareReportOptions(app, &a);
  if (auto rc = ParseArgs(app, argc, argv)) return *rc;
  if (Status st = CheckOutputForm(a); !st.ok()) return PrintError(st.error());
  if (a.openmetrics) return RunOpenMetricsReport(a);
  Filters histogram_filter;
  auto filters = ResolveFilters(&a, &histogram_filter);
  if (!filters.ok()) return PrintError(filters.error());
  const bool rip = a.by == "rip" || !a.rip_args.folded.empty();
  if ((a.csv || !a.histogram.empty()) && rip) {
    return PrintError(MakeError(kExitUsage, "cli.conflicting-options",
                                std::string(a.csv ? "--csv" : "--histogram") + " does not go with --by rip or --folded",
                                "use --by reason, vm, vcpu or cpu with it"));
  }
  InputFormat fmt = InputFormatFromName(a.input_format);
  // The symbol options only act with --by rip / --folded, but a bad value is refused either way.
  if (Status st = ResolveGuestSymbolArgs(&a.rip_args.symbols); !st.ok()) return PrintError(st.error());
  if (!a.html_out.empty()) {
    if (rip || a.json) {
      return PrintError(MakeError(kExitUsage, "report.html-with",
                                  "--html cannot be combined with --json, --by rip or --folded",
                                  "the page already holds the flame graph of --by rip; run the others separately"));
    }
    return RunHtmlReport(
        {a.path, a.html_out, fmt, a.options, *filters, DecodeThreads(a.threads), a.clock, a.rip_args.symbols});
  }
  if (rip) {
    return RunRipReport({a.path, fmt, *filters, a.json, a.by == "rip", DecodeThreads(a.threads), a.clock}, a.rip_args);
  }
  return RunTableReport(a, fmt, *filters, histogram_filter);
}

}  // namespace exitscope
