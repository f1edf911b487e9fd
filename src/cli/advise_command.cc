// `exitscope advise FILE`: recognises known exit-cost patterns in a trace and prices their fixes from
// the trace's own exit times. Text by default, --json for tools (schema_version in the document).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "advise/advice_reporter.h"
#include "advise/advisor.h"
#include "advise/exit_collector.h"
#include "cli/command.h"
#include "cli/filter_options.h"
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

constexpr char kExamples[] =
    "Examples:\n"
    "  exitscope advise trace.dat                          # findings, most saving first\n"
    "  exitscope advise --json trace.dat | jq '.findings[0]'\n"
    "  exitscope advise --guest-kallsyms kallsyms.txt trace.dat   # guest functions in the evidence\n"
    "  trace-cmd report trace.dat > t.txt && exitscope advise t.txt   # text works too";

constexpr char kExitStatus[] =
    "Exit status: 0 complete; 65 the trace lost events or holds malformed data (advice printed,\n"
    "diagnostics on stderr) or is unreadable; 64 bad option; 66 input missing; 74 I/O error;\n"
    "77 permission denied.";

}  // namespace

int RunAdviseCommand(int argc, char** argv) {
  CLI::App app("exitscope advise: known exit-cost patterns in a trace, each with the saving of its fix",
               "exitscope advise");
  app.footer(std::string(kHelp) + "\n\n" + kHelpInputs +
             ";\nor trace text from `trace-cmd report`, `perf script` or tracefs's trace file (also .gz).\n\n" +
             kExamples + "\n\n" + kHelpPartial + "\n\n" + kExitStatus);
  std::string path;
  bool json = false;
  GuestSymbolArgs sym_args;
  app.add_option("FILE", path, "trace to advise on")->required();
  app.add_flag("--json", json, "JSON output (schema_version 1)");
  unsigned threads = 0;
  app.add_option("-j,--threads", threads,
                 "threads decoding an uncompressed trace.dat (default: one per core, up to 8; 1 = sequential)");
  AddGuestSymbolOptions(app, &sym_args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitOnParseError(app, e);
  }
  if (Status st = ResolveGuestSymbolArgs(&sym_args); !st.ok()) return PrintError(st.error());
  const GuestSymbolOptions& sym = sym_args.options;
  auto source = OpenKvmEventSource(path, InputFormat::kAuto, DecodeThreads(threads));
  if (!source) return PrintError(source.error());
  ExitProfile profile;
  Status read = ReadWithSequentialFallback(&source.value(), path, InputFormat::kAuto,
                                           [&](KvmEventSource& src) { profile = CollectExits(&src); });
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
