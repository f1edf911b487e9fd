// `exitscope advise FILE`: recognises known exit-cost patterns in a trace and prices their fixes from
// the trace's own exit times. Text by default, --json for tools (schema_version in the document).
#include <CLI/CLI.hpp>

#include <cstdio>

#include "advise/advice_reporter.h"
#include "advise/advisor.h"
#include "advise/exit_collector.h"
#include "cli/command.h"
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
  GuestSymbolOptions sym;
  std::string slide_text;
  app.add_option("FILE", path, "trace to advise on")->required();
  app.add_flag("--json", json, "JSON output (schema_version 1)");
  app.add_option("--guest-kallsyms", sym.kallsyms, "copy of the guest's /proc/kallsyms");
  app.add_option("--guest-system-map", sym.system_map, "the guest kernel's System.map");
  app.add_option("--guest-vmlinux", sym.vmlinux, "the guest kernel's vmlinux (ELF with symbols)");
  app.add_option("--guest-kaslr-slide", slide_text, "guest KASLR slide (hex), instead of inferring it");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  if (!slide_text.empty()) {
    try {
      sym.slide = static_cast<int64_t>(std::stoll(slide_text, nullptr, 16));
    } catch (...) {
      return PrintError(MakeError(kExitUsage, "advise.bad-slide", "--guest-kaslr-slide '" + slide_text +
                                  "' is not a hex number", "e.g. --guest-kaslr-slide 0x1e600000"));
    }
  }
  auto source = OpenKvmEventSource(path);
  if (!source) return PrintError(source.error());
  ExitProfile profile = CollectExits(source->get());

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
