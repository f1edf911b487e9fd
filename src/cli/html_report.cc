#include "cli/html_report.h"

#include <cstdio>
#include <fstream>
#include <memory>

#include "advise/advisor.h"
#include "advise/exit_collector.h"
#include "analysis/exit_bins.h"
#include "analysis/report_pipeline.h"
#include "analysis/rip_tracker.h"
#include "cli/command.h"
#include "pipeline/tracedat_slices.h"
#include "report/html_sections.h"

namespace exitscope {

int WriteOutputFile(const std::string& path, const std::string& bytes, const char* what) {
  if (path == "-") {
    WriteStdout(bytes);
    return FinishStdout(kExitOk);
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    return PrintError(MakeError(kExitIoErr, "output.write-file",
                                std::string("cannot write the ") + what + " to " + path,
                                "check that the directory exists, is writable and has free space"));
  }
  return kExitOk;
}

namespace {

// What the page is made from: the report and the sinks fed its accepted exits in the same pass.
struct HtmlPass {
  Report report;
  std::unique_ptr<ExitBinner> bins;
  std::unique_ptr<RipTracker> rips;
  std::unique_ptr<ExitCollector> collector;
  Diagnostics collector_diag;  // its own pairer sees no event (the report's pairs the exits)
};

Status ReadForPage(const HtmlReportRequest& req, std::unique_ptr<KvmEventSource>* source, HtmlPass* pass) {
  return ReadWithSequentialFallback(
      source, req.path, req.format,
      [&](KvmEventSource& src) {
        pass->bins = std::make_unique<ExitBinner>(src.meta());
        pass->rips = std::make_unique<RipTracker>(src.meta(), RipFilter{});  // fed the report's accepted exits
        ReportTaps taps;
        taps.accepted = {pass->bins.get(), pass->rips.get()};
        taps.on_start = [&](uint64_t first_ts_ns) { pass->bins->SetOrigin(first_ts_ns); };
        if (req.advise) {
          pass->collector = std::make_unique<ExitCollector>(&src.meta(), &pass->collector_diag);
          taps.accepted.push_back(pass->collector.get());
          taps.events = pass->collector.get();
        }
        pass->report = BuildReport(src, req.options, {}, taps);
      },
      req.clock);
}

// advise --html: the findings, from the collector that saw the report's own pass.
Advice AdviseFromPass(HtmlPass& pass, const GuestSymbolizer& symbols, const BenchCosts* bench) {
  ExitProfile profile = pass.collector->Finish();
  // The pass's diagnostics are the report's (source and pairer): the same rule as MarkPartial.
  profile.partial = pass.report.partial;
  profile.partial_counters.clear();
  for (const auto& c : pass.report.diagnostics) {
    if (c.severity != Severity::kInfo) profile.partial_counters.push_back(c.name);
  }
  return RunAdvisor(profile, symbols, bench);
}

}  // namespace

int RunHtmlReport(HtmlReportRequest req) {
  if (Status st = ResolveGuestSymbolArgs(&req.symbols); !st.ok()) return PrintError(st.error());
  auto source = OpenKvmEventSource(req.path, req.format, req.threads, req.clock);
  if (!source.ok()) return PrintError(source.error());
  if (req.options.from_s || req.options.to_s) {
    if (Status st = RequireNsClock((*source)->meta(), "--from/--to"); !st.ok()) return PrintError(st.error());
  }
  if (req.advise) {
    if (Status st = RequireNsClock((*source)->meta(), "advise"); !st.ok()) return PrintError(st.error());
  }
  HtmlPass pass;
  if (Status read = ReadForPage(req, &source.value(), &pass); !read.ok()) return PrintError(read.error());
  const Report& report = pass.report;
  Isa isa = report.context.isa == "vmx" ? Isa::kVmx : report.context.isa == "svm" ? Isa::kSvm : Isa::kUnknown;
  if (Status st = CheckReasonForIsa(req.filters, isa); !st.ok()) return PrintError(st.error());

  GuestSymbolizer symbols;
  if (req.symbols.options.any()) {
    auto loaded = GuestSymbolizer::Load(req.symbols.options, pass.rips->SiteRips());
    if (!loaded) return PrintError(loaded.error());
    symbols = std::move(loaded.value());
  }
  const TimeUnit unit = report.context.time_unit;
  HtmlPage page(std::string(req.advise ? "exitscope advise: " : "exitscope report: ") + req.path,
                req.advise ? "advise" : "report");
  page.SetFilters(FilterChoices(*pass.bins));
  if (req.advise) page.Add(FindingsSection(AdviseFromPass(pass, symbols, req.bench), report));
  page.Add(ContextSection(report));
  page.Add(ReasonsSection(report));
  page.Add(LatencySection(*pass.bins, unit));
  page.Add(RateSection(*pass.bins));
  page.Add(FlameSection(pass.rips->Folded(symbols), symbols.Describe(), unit));
  if (req.options.details) page.Add(DetailsSection(report));
  const std::string html = page.Render();
  if (int rc = WriteOutputFile(req.out, html, "HTML report"); rc != kExitOk) return rc;
  if (req.out != "-") {
    std::fprintf(stderr, "wrote %s (%zu bytes, %llu exits)\n", req.out.c_str(), html.size(),
                 static_cast<unsigned long long>(report.totals.reported));
  }
  return report.partial ? kExitDataErr : kExitOk;
}

}  // namespace exitscope
