// `exitscope advise FILE`: recognises known exit-cost patterns in a trace and prices their fixes from
// the trace's own exit times. Text by default, --json for tools (schema_version in the document).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "advise/advice_reporter.h"
#include "advise/advisor.h"
#include "advise/exit_collector.h"
#include "cli/command.h"
#include "cli/rip_report.h"
#include "sources/tracedat_slices.h"
#include "symbols/guest_symbolizer.h"

namespace exitscope {
namespace {

constexpr char kHelp[] =
    "Reads a kvm trace (trace.dat, perf.data or their text) and names the exit patterns that cost the\n"
    "most, each with its share of exit time, the saving a fix would bring (priced from the trace's own\n"
    "exit times), evidence (counts, time, guest RIPs) and a confidence. Record with `-e kvm` (all kvm\n"
    "events) so MSR indexes, MMIO addresses and trips to the VMM are known; kvm_exit/kvm_entry alone\n"
    "still give the exit-reason patterns.";

}  // namespace

int RunAdviseCommand(int argc, char** argv) {
  CLI::App app(kHelp, "exitscope advise");
  std::string path;
  bool json = false;
  GuestSymbolArgs sym_args;
  app.add_option("FILE", path, "trace to advise on")->required();
  app.add_flag("--json", json, "JSON output (schema_version 1)");
  unsigned threads = 0;
  app.add_option("-j,--threads", threads,
                 "threads decoding an uncompressed trace.dat (default: one per core, up to 8; 1 = sequential)");
  AddGuestSymbolOptions(app, &sym_args);
  ClockOptions clock;
  AddClockOptions(app, &clock);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (Status st = ResolveGuestSymbolArgs(&sym_args); !st.ok()) return PrintError(st.error());
  const GuestSymbolOptions& sym = sym_args.options;
  auto source = OpenKvmEventSource(path, InputFormat::kAuto, DecodeThreads(threads), clock);
  if (!source) return PrintError(source.error());
  // Savings, rates and thresholds are priced in ns: TSC cycles or counts would price them wrong.
  if (Status st = RequireNsClock((*source)->meta(), "advise"); !st.ok()) return PrintError(st.error());
  for (const auto& note : (*source)->meta().clock_notes) std::fprintf(stderr, "warning: %s\n", note.c_str());
  ExitProfile profile;
  Status read = ReadWithSequentialFallback(&source.value(), path, InputFormat::kAuto,
                                           [&](KvmEventSource& src) { profile = CollectExits(&src); }, clock);
  if (!read.ok()) return PrintError(read.error());

  GuestSymbolizer symbols;
  if (sym.any()) {
    std::vector<SiteRip> rips;
    for (const auto& e : profile.exits) {
      if (GuestSymbolizer::IsKernel(e.rip)) rips.push_back({e.rip, e.exit_class});
    }
    auto loaded = GuestSymbolizer::Load(sym, rips);
    if (!loaded) return PrintError(loaded.error());
    symbols = std::move(loaded.value());
  }
  Advice advice = RunAdvisor(profile, symbols);
  std::string out = json ? RenderAdviceJson(advice, path) : RenderAdviceText(advice, path);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  const Diagnostics& diag = (*source)->diagnostics();
  for (const auto& c : diag.NonZero()) {
    std::fprintf(stderr, "diagnostic: %s = %llu (%s) — %s\n", c.name.c_str(),
                 static_cast<unsigned long long>(c.count), std::string(SeverityName(c.severity)).c_str(),
                 c.description.c_str());
  }
  return diag.HasDataLoss() ? kExitDataErr : kExitOk;
}

}  // namespace exitscope
