// `exitscope diff BEFORE AFTER`: two traces (any formats exitscope reads) through the one report
// pipeline each, compared per exit reason and detail key (analysis/report_diff.h), as text or JSON,
// with --fail-if thresholds for CI. Exit status: 0, 1 when a threshold tripped, 65 when a side is
// PARTIAL (and nothing tripped), other sysexits codes for operational failures.
#include <CLI/CLI.hpp>
#include <charconv>
#include <fmt/format.h>
#include <cmath>

#include "analysis/report_diff.h"
#include "analysis/report_pipeline.h"
#include "cli/command.h"
#include "cli/filter_options.h"
#include "cli/html_report.h"
#include "report/html_page.h"
#include "report/html_sections.h"
#include "pipeline/input_detector.h"
#include "pipeline/tracedat_slices.h"
#include "report/diff_reporter.h"

namespace exitscope {
namespace {

// diff(1)'s and cmp(1)'s "the difference you asked about is there"; distinct from 64/65/66/74/77.
constexpr int kExitThresholdTripped = 1;

constexpr const char* kDiffHelp =
    R"(Compares two recordings exit reason by exit reason and detail key by detail key (MSR,
port, MMIO GPA, APIC register, hypercall, KVM_EXIT_* …): count, exits/s, share of all exits,
handling time mean / p50 / p99, exit time, and the share that went to the VMM (where
kvm_userspace_exit was recorded; "?" where not), before → after, top movers first, with a
one-line verdict. Each trace is read by the same pipeline as `exitscope report`.

Normalisation (--per): what a change is measured against. run compares the raw counts (the
two recordings did the same work, e.g. a fixed number of benchmark iterations); second
compares exits per second of trace; vcpu-second exits per second and vCPU thread. auto (the
default) takes vcpu-second when the vCPU thread counts differ, second when the durations
differ by more than 10 %, else run; the output says which and why. TIME is exit time per unit.

Beyond noise — a change is marked only when its test says so after Holm's adjustment over
every row (family-wise p < --alpha, default 0.01) and it is large enough to matter:
  counts:  the conditional binomial test of two Poisson rates (given n1 + n2 exits, n1 is
           Binomial(n1 + n2, e1 / (e1 + e2)) for exposures e1, e2 when the rates are equal;
           exact), and a change of at least --min-change % (default 5);
  latency: the Mann-Whitney U test on the two handling-time histograms (log buckets ~0.4 %
           wide, ties counted half; normal approximation with tie correction), and an effect
           |P(an after exit is slower than a before exit) − 0.5| >= 0.05.
Exits come in bursts, not independently: the minimum change keeps a large trace's tiny drift
from counting. Under emulation (QEMU TCG) separate runs differ by tens of % in time.)";

constexpr const char* kDiffExamples = R"(Examples:
  exitscope diff before.dat after.dat                     # what changed, top movers first
  exitscope diff --per run base.dat lazy-dr.dat           # same fixed work: compare raw counts
  exitscope diff trace.dat perf.data                      # formats may differ
  exitscope diff --pid 4242 before.dat after.dat          # the same VM (host pid) on both sides
  exitscope diff --before-pid 4242 --after-pid 5151 a.dat b.dat   # one VM each side
  exitscope diff --json a.dat b.dat | jq '.reasons[0]'
  exitscope diff --fail-if 'HLT.p99 > +10%' --fail-if 'all.time > +5%' base.dat new.dat

--fail-if SUBJECT.METRIC OP VALUE (repeatable): SUBJECT an exit reason (any spelling), all, or
KIND:KEY of a detail row (msr:0x6e0, pio:0x40, mmio:0xd0000000, userspace:KVM_EXIT_MMIO, or
KIND:NAME such as apic:TMICT); METRIC count (exits per unit), rate (exits/s), mean, p50, p99,
time (exit time per unit); OP >, >=, <, <=; VALUE a relative change (+10%, -20%; a row new in
AFTER is +inf %) or an absolute one in the metric's unit (+2us, +1ms; exits; exits/s). A
threshold trips on the measured change, beyond noise or not (the output says which).)";

constexpr const char* kDiffExitStatus =
    "Exit status: 0 no threshold tripped; 1 a --fail-if threshold tripped (the rest of the output\n"
    "as always); 65 a trace is PARTIAL or unreadable (when nothing tripped); 64 bad option (the hint\n"
    "names the valid values; also times in different units); 66 input missing; 74 I/O error;\n"
    "77 permission denied.";

struct SideArgs {
  std::string path, pid, vcpu;
};

std::string Selection(const Filters& f) {
  std::string s;
  if (f.pid) s += "pid " + std::to_string(*f.pid);
  if (f.vcpu) s += (s.empty() ? "" : ", ") + std::string("vcpu ") + std::to_string(*f.vcpu);
  return s;
}

Result<Report> ReadSide(const std::string& path, const ReportOptions& options, unsigned threads,
                        const ClockOptions& clock) {
  auto source = OpenKvmEventSource(path, InputFormat::kAuto, DecodeThreads(threads), clock);
  if (!source.ok()) return source.error();
  if (options.from_s || options.to_s) {
    if (Status st = RequireNsClock((*source)->meta(), "--from/--to"); !st.ok()) return st.error();
  }
  Report report;
  Status read = ReadWithSequentialFallback(
      &source.value(), path, InputFormat::kAuto, [&](KvmEventSource& src) { report = BuildReport(src, options); },
      clock);
  if (!read.ok()) return read.error();
  return report;
}

Result<double> Number(std::string_view option, const std::string& text, double lo, double hi) {
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty() || !std::isfinite(v) || v < lo || v > hi) {
    return MakeError(
        kExitUsage, "cli.bad-value", std::string(option) + " '" + text + "' is out of range",
        std::string(option) + " takes a number from " + fmt::format("{}", lo) + " to " + fmt::format("{}", hi));
  }
  return v;
}

}  // namespace

int RunDiffCommand(int argc, char** argv) {
  CLI::App app{"exitscope diff: what changed between two recordings, per exit reason and detail key", "exitscope diff"};
  app.footer(std::string(kDiffHelp) + "\n\n" + kHelpInputs + ";\nor trace text. The two may differ in format.\n\n" +
             kDiffExamples + "\n\n" + kHelpPartial + "\n\n" + kDiffExitStatus);
  SideArgs before, after;
  FilterArgs both;
  std::vector<std::string> fail_if;
  std::string per = "auto", alpha = "0.01", min_change = "5", rows = "20";
  bool json = false, all_rows = false;
  unsigned threads = 0;
  ClockOptions clock;
  app.add_option("BEFORE", before.path, "the baseline trace (trace.dat, perf.data or text)")->required();
  app.add_option("AFTER", after.path, "the trace to compare with it")->required();
  AddFilterOptions(app, &both, kFilterPid | kFilterVcpu | kFilterWindow);
  app.add_option("--before-pid", before.pid, "only this VM (host pid) or thread in BEFORE (instead of --pid)");
  app.add_option("--after-pid", after.pid, "only this VM (host pid) or thread in AFTER (instead of --pid)");
  app.add_option("--before-vcpu", before.vcpu, "only this vCPU index in BEFORE (instead of --vcpu)");
  app.add_option("--after-vcpu", after.vcpu, "only this vCPU index in AFTER (instead of --vcpu)");
  app.add_option("--per", per, "normalisation: auto (default), run (raw counts), second, vcpu-second")
      ->check(CLI::IsMember({"auto", "run", "second", "vcpu-second"}));
  app.add_option("--fail-if", fail_if, "exit 1 when this threshold trips, e.g. 'HLT.p99 > +10%' (repeatable)");
  app.add_option("--alpha", alpha, "family-wise significance level after Holm's adjustment (default 0.01)");
  app.add_option("--min-change", min_change, "smallest count change in % that can be beyond noise (default 5)");
  app.add_option("--rows", rows, "detail rows shown in text (default 20; --json has all)");
  app.add_flag("--all", all_rows, "also detail rows whose count did not change");
  app.add_flag("--json", json, "one JSON object (schema exitscope.diff/1) instead of tables");
  std::string html_out;
  app.add_option("--html", html_out,
                 "also write one self-contained HTML page to OUT (- = stdout, then no table): the verdict, both "
                 "sides and every row before -> after; no network needed to view it")
      ->option_text("OUT");
  app.add_option("-j,--threads", threads,
                 "threads decoding an uncompressed trace.dat (default: one per core, up to 8)");
  AddClockOptions(app, &clock);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitOnParseError(app, e);
  }
  if (before.path == "-" && after.path == "-") {
    return PrintError(MakeError(kExitUsage, "cli.two-stdin", "BEFORE and AFTER cannot both be '-' (stdin)",
                                "give one of them as a file: `exitscope diff before.dat -`"));
  }
  for (auto [side, pid, vcpu] :
       {std::tuple{"before", &before.pid, &before.vcpu}, std::tuple{"after", &after.pid, &after.vcpu}}) {
    if (!pid->empty() && !both.pid.empty()) {
      return PrintError(MakeError(kExitUsage, "cli.conflicting-options",
                                  std::string("--pid and --") + side + "-pid both given",
                                  "--pid selects the same VM on both sides; --before-pid / --after-pid one each side"));
    }
    if (!vcpu->empty() && !both.vcpu.empty()) {
      return PrintError(
          MakeError(kExitUsage, "cli.conflicting-options", std::string("--vcpu and --") + side + "-vcpu both given",
                    "--vcpu selects the same vCPU on both sides; --before-vcpu / --after-vcpu one each side"));
    }
  }
  auto side_filters = [&](const SideArgs& s) {
    FilterArgs a = both;
    if (!s.pid.empty()) a.pid = s.pid;
    if (!s.vcpu.empty()) a.vcpu = s.vcpu;
    return ParseFilters(a);
  };
  auto fb = side_filters(before);
  if (!fb.ok()) return PrintError(fb.error());
  auto fa = side_filters(after);
  if (!fa.ok()) return PrintError(fa.error());
  DiffOptions options;
  if (per != "auto") {
    options.normalize = per == "run"      ? DiffNormalize::kRun
                        : per == "second" ? DiffNormalize::kSecond
                                          : DiffNormalize::kVcpuSecond;
  }
  auto a = Number("--alpha", alpha, 1e-12, 0.5);
  if (!a.ok()) return PrintError(a.error());
  options.alpha = *a;
  auto mc = Number("--min-change", min_change, 0, 1e6);
  if (!mc.ok()) return PrintError(mc.error());
  options.min_change_pct = *mc;
  auto nrows = ParseCount("--rows", rows, 1000000, "the number of detail rows to show");
  if (!nrows.ok()) return PrintError(nrows.error());
  for (const auto& text : fail_if) {
    auto th = ParseThreshold(text);
    if (!th.ok()) return PrintError(th.error());
    options.thresholds.push_back(*th);
  }
  options.from_s = fb->from_s;
  options.to_s = fb->to_s;
  options.before_selection = Selection(*fb);
  options.after_selection = Selection(*fa);

  auto report_options = [](const Filters& f) {
    ReportOptions o;
    o.pid = f.pid;
    o.vcpu = f.vcpu;
    o.from_s = f.from_s;
    o.to_s = f.to_s;
    o.histograms = true;
    return o;
  };
  auto rb = ReadSide(before.path, report_options(*fb), threads, clock);
  if (!rb.ok()) return PrintError(rb.error());
  auto ra = ReadSide(after.path, report_options(*fa), threads, clock);
  if (!ra.ok()) return PrintError(ra.error());
  auto diff = DiffReports(*rb, *ra, options);
  if (!diff.ok()) return PrintError(diff.error());
  const int status = diff->tripped ? kExitThresholdTripped : diff->partial ? kExitDataErr : kExitOk;
  if (!html_out.empty()) {
    HtmlPage page("exitscope diff: " + before.path + " → " + after.path, "diff");
    page.Add(DiffSection(*diff));
    if (int written = WriteOutputFile(html_out, page.Render(), "HTML page"); written != kExitOk) return written;
    if (html_out == "-") return status;
  }
  WriteStdout(json ? RenderJsonDiff(*diff)
                   : RenderTextDiff(*diff, TextDiffOptions{static_cast<size_t>(*nrows), all_rows}));
  return FinishStdout(diff->tripped ? kExitThresholdTripped : diff->partial ? kExitDataErr : kExitOk);
}

}  // namespace exitscope
