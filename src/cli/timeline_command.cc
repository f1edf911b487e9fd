// `exitscope timeline -o OUT.json TRACE`: the exits as Chrome trace-event JSON for the Perfetto UI
// and chrome://tracing (sinks/chrome_trace_writer.h), from the report's one pass with its filters, so
// the file's exits are the report's. Exit status as `report`'s; a capped file says so on stderr and
// in its otherData.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "analysis/exit_bins.h"
#include "analysis/report_pipeline.h"
#include "cli/command.h"
#include "cli/filter_options.h"
#include "pipeline/input_detector.h"
#include "pipeline/tracedat_slices.h"
#include "sinks/chrome_trace_writer.h"

namespace exitscope {
namespace {

constexpr const char* kTimelineHelp =
    R"(Writes every exit of the trace as a Chrome trace-event JSON file that the Perfetto UI
(ui.perfetto.dev, "Open trace file") and chrome://tracing load, offline: a process per VM, a
thread per vCPU thread, one slice per timed exit (kvm_exit -> kvm_entry) named by its reason with
its details as args (guest RIP, CPUs, handling and blocked ns, MSR / port / GPA / APIC register …),
an instant per untimed exit, and counters of exits/s per reason for each VM. Times are us from the
trace's first event, to the ns.

A UI slows past a few hundred MB of JSON: at most --max-exits exits are written (the first ones,
a prefix in time; the counters still cover the whole trace). A capped file says so on stderr, in
otherData.exitscope.truncated and with a global instant where it was cut. Narrow it with
--from/--to, --pid, --vcpu or --reason.)";

constexpr const char* kTimelineExamples = R"(Examples:
  exitscope timeline -o exits.json trace.dat
  exitscope timeline -o storm.json --from 2 --to 2.5 --pid 4242 trace.dat
  exitscope timeline -o all.json --max-exits 0 perf.data     # no cap

Exit status: 0 written; 65 PARTIAL (written) or unreadable data; 64 bad option (also a trace whose
times are not ns); 66 input missing; 74 the file could not be written.)";

// What the command line gave, bound to the options before parsing.
struct TimelineArgs {
  std::string path, out_path, max_text;
  FilterArgs filter_args;
  unsigned threads = 0;
  ClockOptions clock;
};

void DeclareTimelineOptions(CLI::App& app, TimelineArgs* a) {
  app.add_option("FILE", a->path, "trace.dat, perf.data or trace text")->required();
  app.add_option("-o,--output", a->out_path, "the JSON file to write (- = stdout)")
      ->required()
      ->option_text("OUT.json");
  app.add_option("--max-exits", a->max_text,
                 fmt::format("write at most N exits (default {}, ~125 MB; 0 = all)", kDefaultTimelineExits))
      ->option_text("N");
  AddFilterOptions(app, &a->filter_args, kFilterPid | kFilterVcpu | kFilterReason | kFilterWindow);
  app.add_option("-j,--threads", a->threads, kThreadsHelp);
  AddClockOptions(app, &a->clock);
}

ReportOptions TimelineReportOptions(const Filters& filters) {
  ReportOptions options;
  SelectByFilters(filters, &options);
  options.details = false;
  if (!filters.reason.empty()) options.reason = filters.reason;
  return options;
}

// What was written, and what the cap left out, on stderr.
void PrintWritten(const ChromeTraceWriter& writer, const ExitBinner& bins, const std::string& out_path,
                  uint64_t max_exits) {
  std::fprintf(stderr, "timeline: %llu exits written to %s", static_cast<unsigned long long>(writer.written()),
               out_path.c_str());
  if (writer.dropped()) {
    std::fprintf(
        stderr,
        "; %llu more NOT written (capped at --max-exits %llu: the file covers the first %.3f s of exits; "
        "--max-exits 0 writes all, or narrow with --from/--to, --pid, --vcpu, --reason)",
        static_cast<unsigned long long>(writer.dropped()), static_cast<unsigned long long>(max_exits),
        static_cast<double>(writer.first_dropped_ts_ns() - std::min(writer.first_dropped_ts_ns(), bins.origin_ns())) *
            1e-9);
  }
  std::fprintf(stderr, "\n");
}

int WriteTimeline(const TimelineArgs& a, const Filters& filters, uint64_t max_exits) {
  const std::string& out_path = a.out_path;
  const ReportOptions options = TimelineReportOptions(filters);
  // stdout cannot be started over if the sliced reader has to read again (an uncompressed trace.dat
  // whose clock stepped back): one_pass opens any other reader, which never reads again.
  auto source =
      OpenKvmEventSource(a.path, InputFormat::kAuto, DecodeThreads(a.threads), a.clock, /*one_pass=*/out_path == "-");
  if (!source.ok()) return PrintError(source.error());
  if (Status st = RequireNsClock((*source)->meta(), "timeline"); !st.ok()) return PrintError(st.error());
  std::FILE* out = out_path == "-" ? stdout : std::fopen(out_path.c_str(), "wb");
  if (!out) {
    return PrintError(MakeError(kExitIoErr, "timeline.open", "cannot create " + out_path + ": " + std::strerror(errno),
                                "check that the directory exists and is writable"));
  }
  std::unique_ptr<ExitBinner> bins;
  std::unique_ptr<ChromeTraceWriter> writer;
  Report report;
  Status read = ReadWithSequentialFallback(
      &source.value(), a.path, InputFormat::kAuto,
      [&](KvmEventSource& src) {
        if (writer) {      // read again sequentially: start the file over
          writer.reset();  // its formatting thread writes no more
          std::fflush(out);
          if (out != stdout) out = std::freopen(out_path.c_str(), "wb", out);
        }
        bins = std::make_unique<ExitBinner>(src.meta());
        // Formatting the exits costs as much as reading them: a thread of its own unless -j 1.
        writer = std::make_unique<ChromeTraceWriter>(out, src.meta(), *bins, max_exits,
                                                     DecodeThreads(a.threads) > 1 ? 1 : 0);
        ReportTaps taps;
        taps.accepted = {bins.get(), writer.get()};
        taps.on_start = [&](uint64_t first_ts_ns) { bins->SetOrigin(first_ts_ns); };
        report = BuildReport(src, options, {}, taps);
      },
      a.clock);
  if (!read.ok()) return PrintError(read.error());
  Isa isa = report.context.isa == "vmx" ? Isa::kVmx : report.context.isa == "svm" ? Isa::kSvm : Isa::kUnknown;
  if (Status st = CheckReasonForIsa(filters, isa); !st.ok()) return PrintError(st.error());
  const bool ok = out && writer->Finish(report);
  if (out && out != stdout && std::fclose(out) != 0)
    return PrintError(
        MakeError(kExitIoErr, "timeline.write", "cannot write " + out_path, "free space on its file system"));
  if (!ok) {
    return PrintError(MakeError(kExitIoErr, "timeline.write", "cannot write " + out_path,
                                "free space on its file system, or write elsewhere"));
  }
  if (out == stdout && FinishStdout(kExitOk) != kExitOk) return kExitIoErr;
  PrintWritten(*writer, *bins, out_path, max_exits);
  return report.partial ? kExitDataErr : kExitOk;
}

}  // namespace

int RunTimelineCommand(int argc, char** argv) {
  CLI::App app{"exitscope timeline: the exits as a Chrome trace-event JSON for Perfetto / chrome://tracing",
               "exitscope timeline"};
  app.footer(std::string(kTimelineHelp) + "\n\n" + kHelpInputs +
             ";\nor trace text from `trace-cmd report`, `perf script` or tracefs's trace file (also .gz).\n\n" +
             kTimelineExamples + "\n\n" + kHelpPartial);
  TimelineArgs a;
  DeclareTimelineOptions(app, &a);
  if (auto rc = ParseArgs(app, argc, argv)) return *rc;
  auto filters = ParseFilters(a.filter_args);
  if (!filters.ok()) return PrintError(filters.error());
  uint64_t max_exits = kDefaultTimelineExits;
  if (!a.max_text.empty()) {
    auto n = ParseCount("--max-exits", a.max_text, UINT64_MAX / 2, "exits to write (0 = all)");
    if (!n.ok()) return PrintError(n.error());
    max_exits = *n;
  }
  return WriteTimeline(a, *filters, max_exits);
}

}  // namespace exitscope
