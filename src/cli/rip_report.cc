#include "cli/rip_report.h"

#include <cstdio>
#include <fstream>
#include <memory>

#include "analysis/exit_driver.h"
#include "analysis/report_pipeline.h"
#include "analysis/rip_tracker.h"
#include "cli/command.h"
#include "decode/exit_reasons.h"
#include "pipeline/tracedat_slices.h"
#include "pipeline/input_detector.h"
#include "report/rip_reporter.h"
#include "report/text_reporter.h"

namespace exitscope {
namespace {

constexpr size_t kDefaultTopRips = 10;

// The RIP filter of the request; a --reason is checked against the trace's ISA as far as the
// header tells it (text inputs learn theirs while read).
Result<RipFilter> MakeRipFilter(const RipReportRequest& req, const TraceMeta& meta) {
  RipFilter filter;
  filter.pid = req.filters.pid;
  filter.vcpu = req.filters.vcpu;
  filter.from_s = req.filters.from_s;
  filter.to_s = req.filters.to_s;
  // The window is in seconds: a trace in TSC cycles or counts cannot place it (as report's).
  if (filter.from_s || filter.to_s) {
    if (Status st = RequireNsClock(meta, "--from/--to"); !st.ok()) return st.error();
  }
  if (!req.filters.reason.empty()) {
    if (Status st = CheckReasonForIsa(req.filters, meta.isa_hint); !st.ok()) return st.error();
    filter.reason = req.filters.reason_codes;
  }
  return filter;
}

// --folded: the stacks to stdout or a file.
Status WriteFolded(const RipTracker& tracker, const GuestSymbolizer& symbols, const std::string& path) {
  std::string folded = tracker.RenderFolded(symbols);
  if (path == "-") {
    WriteStdout(folded);
    return {};
  }
  std::ofstream out(path, std::ios::binary);
  out << folded;
  if (!out) {
    return MakeError(kExitIoErr, "report.folded-write", "cannot write " + path,
                     "check the directory exists and is writable");
  }
  return {};
}

// The table of top RIPs per reason, as text or JSON with report's context block.
std::string RenderRipTable(const RipReportRequest& req, const RipTracker& tracker, const GuestSymbolizer& symbols,
                           KvmEventSource& src, const ExitRun& run) {
  size_t top = req.filters.top > 0 ? static_cast<size_t>(req.filters.top) : kDefaultTopRips;
  RipSummary summary = tracker.Summarize(symbols, top);
  std::string out;
  if (req.json) {
    ReportContext context = BuildContext(src.meta(), run);
    context.vms = tracker.VmLabels();
    context.vcpu_threads = tracker.Threads();
    ReportOptions shown;  // the filter summary as report's context block words it
    shown.pid = req.filters.pid;
    shown.vcpu = req.filters.vcpu;
    shown.from_s = req.filters.from_s;
    shown.to_s = req.filters.to_s;
    if (!req.filters.reason.empty()) shown.reason = req.filters.reason;
    context.filters = FilterSummary(shown, run.isa_seen);
    return RenderRipJson(summary, context, src.diagnostics().NonZero(), src.diagnostics().HasDataLoss());
  }
  // The first line says what was lost, as `report` does (the JSON carries "partial").
  if (src.diagnostics().HasDataLoss()) out = RenderPartialLine(src.diagnostics().NonZero());
  out += RenderRipText(summary, req.path);
  return out;
}

}  // namespace

void AddGuestSymbolOptions(CLI::App& app, GuestSymbolArgs* args) {
  app.add_option("--guest-kallsyms", args->options.kallsyms, "copy of the guest's /proc/kallsyms (func+0xoff RIPs)");
  app.add_option("--guest-system-map", args->options.system_map, "the guest kernel's System.map");
  app.add_option("--guest-vmlinux", args->options.vmlinux, "the guest kernel's vmlinux (ELF with symbols)");
  app.add_option("--guest-kaslr-slide", args->slide_text, "guest KASLR slide in hex (default: inferred)");
}

Status ResolveGuestSymbolArgs(GuestSymbolArgs* args) {
  if (args->slide_text.empty()) return Status::Ok();
  try {
    size_t used = 0;
    args->options.slide = static_cast<int64_t>(std::stoll(args->slide_text, &used, 16));
    if (used != args->slide_text.size()) throw std::invalid_argument("trailing");
  } catch (...) {
    return MakeError(kExitUsage, "symbols.bad-slide",
                     "--guest-kaslr-slide '" + args->slide_text + "' is not a hex number",
                     "e.g. --guest-kaslr-slide 0x1e600000");
  }
  // KASLR moves the kernel up from where it was linked, never down.
  if (args->options.slide < 0) {
    return MakeError(kExitUsage, "symbols.bad-slide", "--guest-kaslr-slide '" + args->slide_text + "' is negative",
                     "the slide is how far KASLR moved the kernel up, e.g. --guest-kaslr-slide 0x1e600000");
  }
  return Status::Ok();
}

void AddRipReportOptions(CLI::App& app, RipReportArgs* args) {
  AddGuestSymbolOptions(app, &args->symbols);
  app.add_option("--folded", args->folded,
                 "write flame-graph folded stacks (vm;vcpu;reason;guest function count) to FILE, - for stdout");
}

int RunRipReport(const RipReportRequest& req, RipReportArgs args) {
  if (Status st = ResolveGuestSymbolArgs(&args.symbols); !st.ok()) return PrintError(st.error());
  auto source = OpenKvmEventSource(req.path, req.format, req.threads, req.clock);
  if (!source.ok()) return PrintError(source.error());
  auto filter = MakeRipFilter(req, (*source)->meta());
  if (!filter.ok()) return PrintError(filter.error());
  std::unique_ptr<RipTracker> tracker_ptr;
  ExitRun run;
  Status read = ReadWithSequentialFallback(
      &source.value(), req.path, req.format,
      [&](KvmEventSource& src) {
        tracker_ptr = std::make_unique<RipTracker>(src.meta(), *filter);
        DriveOptions drive;
        drive.on_start = [&](uint64_t first_ts_ns) { tracker_ptr->SetOrigin(first_ts_ns); };
        run = DriveExits(src, tracker_ptr.get(), &src.diagnostics(), drive);
      },
      req.clock);
  if (!read.ok()) return PrintError(read.error());
  KvmEventSource& src = **source;
  // Text inputs learn their ISA while read.
  if (Status st = CheckReasonForIsa(req.filters, src.meta().isa_hint); !st.ok()) return PrintError(st.error());
  RipTracker& tracker = *tracker_ptr;

  GuestSymbolizer symbols;
  if (args.symbols.options.any()) {
    auto loaded = GuestSymbolizer::Load(args.symbols.options, tracker.SiteRips());
    if (!loaded) return PrintError(loaded.error());
    symbols = std::move(loaded.value());
  }
  if (!args.folded.empty()) {
    if (Status st = WriteFolded(tracker, symbols, args.folded); !st.ok()) return PrintError(st.error());
  }
  if (req.table && args.folded != "-") WriteStdout(RenderRipTable(req, tracker, symbols, src, run));
  if (int written = FinishStdout(kExitOk); written != kExitOk) return written;
  for (const auto& c : src.diagnostics().NonZero()) {
    std::fprintf(stderr, "diagnostic: %s = %llu (%s)\n", c.name.c_str(), static_cast<unsigned long long>(c.count),
                 std::string(SeverityName(c.severity)).c_str());
  }
  return src.diagnostics().HasDataLoss() ? kExitDataErr : kExitOk;
}

}  // namespace exitscope
