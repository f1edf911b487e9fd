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

// What the command line gave, bound to the options before parsing.
struct DiffArgs {
  SideArgs before, after;
  FilterArgs both;
  std::vector<std::string> fail_if;
  std::string per = "auto", alpha = "0.01", min_change = "5", rows = "20";
  bool json = false, all_rows = false;
  unsigned threads = 0;
  ClockOptions clock;
  std::string html_out;
};

void DeclareDiffOptions(CLI::App& app, DiffArgs* d) {
  app.add_option("BEFORE", d->before.path, "the baseline trace (trace.dat, perf.data or text)")->required();
  app.add_option("AFTER", d->after.path, "the trace to compare with it")->required();
  AddFilterOptions(app, &d->both, kFilterPid | kFilterVcpu | kFilterWindow);
  app.add_option("--before-pid", d->before.pid, "only this VM (host pid) or thread in BEFORE (instead of --pid)");
  app.add_option("--after-pid", d->after.pid, "only this VM (host pid) or thread in AFTER (instead of --pid)");
  app.add_option("--before-vcpu", d->before.vcpu, "only this vCPU index in BEFORE (instead of --vcpu)");
  app.add_option("--after-vcpu", d->after.vcpu, "only this vCPU index in AFTER (instead of --vcpu)");
  app.add_option("--per", d->per, "normalisation: auto (default), run (raw counts), second, vcpu-second")
      ->check(CLI::IsMember({"auto", "run", "second", "vcpu-second"}));
  app.add_option("--fail-if", d->fail_if, "exit 1 when this threshold trips, e.g. 'HLT.p99 > +10%' (repeatable)");
  app.add_option("--alpha", d->alpha, "family-wise significance level after Holm's adjustment (default 0.01)");
  app.add_option("--min-change", d->min_change, "smallest count change in % that can be beyond noise (default 5)");
  app.add_option("--rows", d->rows, "detail rows shown in text (default 20; --json has all)");
  app.add_flag("--all", d->all_rows, "also detail rows whose count did not change");
  app.add_flag("--json", d->json, "one JSON object (schema exitscope.diff/1) instead of tables");
  app.add_option("--html", d->html_out,
                 "also write one self-contained HTML page to OUT (- = stdout, then no table): the verdict, both "
                 "sides and every row before -> after; no network needed to view it")
      ->option_text("OUT");
  app.add_option("-j,--threads", d->threads, kThreadsHelp);
  AddClockOptions(app, &d->clock);
}

// One stdin at most; --pid / --vcpu or the per-side options, not both.
Status CheckSides(const DiffArgs& d) {
  if (d.before.path == "-" && d.after.path == "-") {
    return MakeError(kExitUsage, "cli.two-stdin", "BEFORE and AFTER cannot both be '-' (stdin)",
                     "give one of them as a file: `exitscope diff before.dat -`");
  }
  for (auto [side, pid, vcpu] :
       {std::tuple{"before", &d.before.pid, &d.before.vcpu}, std::tuple{"after", &d.after.pid, &d.after.vcpu}}) {
    if (!pid->empty() && !d.both.pid.empty()) {
      return MakeError(kExitUsage, "cli.conflicting-options", std::string("--pid and --") + side + "-pid both given",
                       "--pid selects the same VM on both sides; --before-pid / --after-pid one each side");
    }
    if (!vcpu->empty() && !d.both.vcpu.empty()) {
      return MakeError(kExitUsage, "cli.conflicting-options", std::string("--vcpu and --") + side + "-vcpu both given",
                       "--vcpu selects the same vCPU on both sides; --before-vcpu / --after-vcpu one each side");
    }
  }
  return {};
}

Result<Filters> SideFilters(const FilterArgs& both, const SideArgs& s) {
  FilterArgs a = both;
  if (!s.pid.empty()) a.pid = s.pid;
  if (!s.vcpu.empty()) a.vcpu = s.vcpu;
  return ParseFilters(a);
}

// --per, --alpha, --min-change and --fail-if into the comparison's options.
Status ParseDiffOptions(const DiffArgs& d, DiffOptions* options) {
  if (d.per != "auto") {
    options->normalize = d.per == "run"      ? DiffNormalize::kRun
                         : d.per == "second" ? DiffNormalize::kSecond
                                             : DiffNormalize::kVcpuSecond;
  }
  auto a = Number("--alpha", d.alpha, 1e-12, 0.5);
  if (!a.ok()) return a.error();
  options->alpha = *a;
  auto mc = Number("--min-change", d.min_change, 0, 1e6);
  if (!mc.ok()) return mc.error();
  options->min_change_pct = *mc;
  return {};
}

Status ParseFailIf(const DiffArgs& d, DiffOptions* options) {
  for (const auto& text : d.fail_if) {
    auto th = ParseThreshold(text);
    if (!th.ok()) return th.error();
    options->thresholds.push_back(*th);
  }
  return {};
}

ReportOptions SideReportOptions(const Filters& f) {
  ReportOptions o;
  SelectByFilters(f, &o);
  o.histograms = true;
  return o;
}

// Both sides read and compared; the page and the text or JSON written.
int CompareAndWrite(const DiffArgs& d, const Filters& fb, const Filters& fa, const DiffOptions& options, size_t nrows) {
  auto rb = ReadSide(d.before.path, SideReportOptions(fb), d.threads, d.clock);
  if (!rb.ok()) return PrintError(rb.error());
  auto ra = ReadSide(d.after.path, SideReportOptions(fa), d.threads, d.clock);
  if (!ra.ok()) return PrintError(ra.error());
  auto diff = DiffReports(*rb, *ra, options);
  if (!diff.ok()) return PrintError(diff.error());
  const int status = diff->tripped ? kExitThresholdTripped : diff->partial ? kExitDataErr : kExitOk;
  if (!d.html_out.empty()) {
    HtmlPage page("exitscope diff: " + d.before.path + " → " + d.after.path, "diff");
    page.Add(DiffSection(*diff));
    if (int written = WriteOutputFile(d.html_out, page.Render(), "HTML page"); written != kExitOk) return written;
    if (d.html_out == "-") return status;
  }
  WriteStdout(d.json ? RenderJsonDiff(*diff) : RenderTextDiff(*diff, TextDiffOptions{nrows, d.all_rows}));
  return FinishStdout(status);
}

}  // namespace

int RunDiffCommand(int argc, char** argv) {
  CLI::App app{"exitscope diff: what changed between two recordings, per exit reason and detail key", "exitscope diff"};
  app.footer(std::string(kDiffHelp) + "\n\n" + kHelpInputs + ";\nor trace text. The two may differ in format.\n\n" +
             kDiffExamples + "\n\n" + kHelpPartial + "\n\n" + kDiffExitStatus);
  DiffArgs d;
  DeclareDiffOptions(app, &d);
  if (auto rc = ParseArgs(app, argc, argv)) return *rc;
  if (Status st = CheckSides(d); !st.ok()) return PrintError(st.error());
  auto fb = SideFilters(d.both, d.before);
  if (!fb.ok()) return PrintError(fb.error());
  auto fa = SideFilters(d.both, d.after);
  if (!fa.ok()) return PrintError(fa.error());
  DiffOptions options;
  if (Status st = ParseDiffOptions(d, &options); !st.ok()) return PrintError(st.error());
  auto nrows = ParseCount("--rows", d.rows, 1000000, "the number of detail rows to show");
  if (!nrows.ok()) return PrintError(nrows.error());
  if (Status st = ParseFailIf(d, &options); !st.ok()) return PrintError(st.error());
  options.from_s = fb->from_s;
  options.to_s = fb->to_s;
  options.before_selection = Selection(*fb);
  options.after_selection = Selection(*fa);
  return CompareAndWrite(d, *fb, *fa, options, static_cast<size_t>(*nrows));
}

}  // namespace exitscope
