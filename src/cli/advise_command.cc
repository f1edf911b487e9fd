// `exitscope advise FILE`: recognises known exit-cost patterns in a trace and prices their fixes by
// what each removes, from the trace's own exit times or (--bench) this host's measured round trips.
// Text by default, --json for tools (schema_version in the document).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <optional>

#include "report/advice_reporter.h"
#include "advise/advisor.h"
#include "advise/bench_costs.h"
#include "advise/exit_collector.h"
#include "analysis/report_pipeline.h"
#include "analysis/vm_grouper.h"
#include "cli/command.h"
#include "cli/filter_options.h"
#include "cli/html_report.h"
#include "cli/rip_report.h"
#include "pipeline/tracedat_slices.h"
#include "symbols/guest_symbolizer.h"
#include "pipeline/input_detector.h"

namespace exitscope {
namespace {

constexpr char kHelp[] =
    "Reads a kvm trace (trace.dat, perf.data or their text) and names the exit patterns that cost the\n"
    "most, each with its share of exit time, the saving a fix would bring (priced from the trace's own\n"
    "handling times), evidence (counts, per-thread rates, time, guest RIPs) and a confidence. Each fix is\n"
    "priced by what it removes: the exit, the trip to the VMM, or part of the handling. Record with\n"
    "`-e kvm` (all kvm events) so MSR indexes, MMIO addresses and trips to the VMM are known;\n"
    "kvm_exit/kvm_entry alone still give the exit-reason patterns, and kvm_exit alone gives them by\n"
    "counts and rates (savings then unpriced, or priced from --bench). A PARTIAL trace (lost events)\n"
    "lowers every confidence a step.";

constexpr char kExamples[] =
    "Examples:\n"
    "  exitscope advise trace.dat                          # findings, most saving first\n"
    "  exitscope advise --json trace.dat | jq '.findings[0]'\n"
    "  exitscope advise --guest-kallsyms kallsyms.txt trace.dat   # guest functions in the evidence\n"
    "  exitscope bench --json > bench.json && exitscope advise --bench bench.json trace.dat\n"
    "  exitscope advise --html advice.html trace.dat       # findings, tables and charts in one page\n"
    "  trace-cmd report trace.dat > t.txt && exitscope advise t.txt   # text works too";

constexpr char kExitStatus[] =
    "Exit status: 0 complete; 65 the trace lost events or holds malformed data (advice printed,\n"
    "diagnostics on stderr), is unreadable, or the --bench file is not `exitscope bench --json`\n"
    "output; 64 bad option; 66 input missing; 74 I/O error;\n"
    "77 permission denied.";

// What the command line gave, bound to the options before parsing.
struct AdviseArgs {
  std::string path;
  bool json = false;
  GuestSymbolArgs sym_args;
  unsigned threads = 0;
  std::string bench_path;
  std::string html_out;
  ClockOptions clock;
};

void DeclareAdviseOptions(CLI::App& app, AdviseArgs* a) {
  app.add_option("FILE", a->path, "trace to advise on")->required();
  app.add_flag("--json", a->json, fmt::format("JSON output (schema exitscope.advise/{})", kAdviseJsonSchemaVersion));
  app.add_option("-j,--threads", a->threads, kThreadsHelp);
  app.add_option("--bench", a->bench_path,
                 "`exitscope bench --json` output from this host: its measured round trips price fixes the "
                 "trace cannot (untimed exits), and are shown beside the trace's own prices")
      ->option_text("FILE");
  AddGuestSymbolOptions(app, &a->sym_args);
  app.add_option("--html", a->html_out,
                 "write one self-contained HTML page to OUT (- = stdout): the findings with their savings, then "
                 "the report's tables and charts")
      ->option_text("OUT");
  AddClockOptions(app, &a->clock);
}

// The advice as text, or as JSON with the report's context block.
std::string RenderAdvice(const AdviseArgs& a, const Advice& advice, const ExitProfile& profile, const TraceMeta& meta,
                         const Diagnostics& diag) {
  if (!a.json) return RenderAdviceText(advice, a.path);
  ReportContext context = BuildContext(meta, profile.run);
  std::vector<int32_t> tids;
  for (const auto& [tid, _] : profile.threads) tids.push_back(tid);
  context.vms = VmGrouper(meta).Labels(tids);
  context.vcpu_threads = tids.size();
  return RenderAdviceJson(advice, context, diag.NonZero());
}

// The trace read through advise's collector, the rules run, the advice written.
int AdviseTrace(const AdviseArgs& a, const BenchCosts* bench) {
  auto source = OpenKvmEventSource(a.path, InputFormat::kAuto, DecodeThreads(a.threads), a.clock);
  if (!source) return PrintError(source.error());
  // Savings, rates and thresholds are priced in ns: TSC cycles or counts would price them wrong.
  if (Status st = RequireNsClock((*source)->meta(), "advise"); !st.ok()) return PrintError(st.error());
  for (const auto& note : (*source)->meta().clock_notes) std::fprintf(stderr, "warning: %s\n", note.c_str());
  ExitProfile profile;
  Status read = ReadWithSequentialFallback(
      &source.value(), a.path, InputFormat::kAuto, [&](KvmEventSource& src) { profile = CollectExits(&src); }, a.clock);
  if (!read.ok()) return PrintError(read.error());
  // The source's diagnostics after the whole read (parallel decoders merge theirs at the end).
  const Diagnostics& diag = (*source)->diagnostics();
  MarkPartial(diag, &profile);

  GuestSymbolizer symbols;
  if (const GuestSymbolOptions& sym = a.sym_args.options; sym.any()) {
    auto loaded = GuestSymbolizer::Load(sym, profile.site_rips);
    if (!loaded) return PrintError(loaded.error());
    symbols = std::move(loaded.value());
  }
  Advice advice = RunAdvisor(profile, symbols, bench);
  WriteStdout(RenderAdvice(a, advice, profile, (*source)->meta(), diag));
  const int written = FinishStdout(kExitOk);
  if (written != kExitOk) return written;
  for (const auto& c : diag.NonZero()) {
    std::fprintf(stderr, "diagnostic: %s = %llu (%s) — %s\n", c.name.c_str(), static_cast<unsigned long long>(c.count),
                 std::string(SeverityName(c.severity)).c_str(), c.description.c_str());
  }
  return diag.HasDataLoss() ? kExitDataErr : kExitOk;
}

}  // namespace

int RunAdviseCommand(int argc, char** argv) {
  CLI::App app("exitscope advise: known exit-cost patterns in a trace, each with the saving of its fix",
               "exitscope advise");
  app.footer(std::string(kHelp) + "\n\n" + kHelpInputs +
             ";\nor trace text from `trace-cmd report`, `perf script` or tracefs's trace file (also .gz).\n\n" +
             kExamples + "\n\n" + kHelpPartial + "\n\n" + kExitStatus);
  AdviseArgs a;
  DeclareAdviseOptions(app, &a);
  if (auto rc = ParseArgs(app, argc, argv)) return *rc;
  if (Status st = ResolveGuestSymbolArgs(&a.sym_args); !st.ok()) return PrintError(st.error());
  std::optional<BenchCosts> bench;
  if (!a.bench_path.empty()) {
    auto loaded = LoadBenchCosts(a.bench_path);
    if (!loaded) return PrintError(loaded.error());
    bench = std::move(loaded.value());
  }
  if (!a.html_out.empty()) {
    if (a.json) {
      return PrintError(MakeError(kExitUsage, "advise.html-with-json", "--html cannot be combined with --json",
                                  "run `exitscope advise --json` separately"));
    }
    HtmlReportRequest req{a.path,  a.html_out, InputFormat::kAuto, {}, {}, DecodeThreads(a.threads),
                          a.clock, a.sym_args};
    req.advise = true;
    req.bench = bench ? &*bench : nullptr;
    return RunHtmlReport(req);
  }
  return AdviseTrace(a, bench ? &*bench : nullptr);
}

}  // namespace exitscope
