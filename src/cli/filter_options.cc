#include "cli/filter_options.h"

#include "analysis/exit_aggregator.h"
#include "cli/command.h"
#include "cli/help_export.h"

#include <algorithm>
#include <charconv>
#include <iterator>
#include <cmath>

namespace exitscope {
namespace {

// include/linux/threads.h PID_MAX_LIMIT (4 M on 64-bit): no host pid or tid is larger.
constexpr int64_t kPidMax = 4194304;
// arch/x86/include/asm/kvm_host.h KVM_MAX_VCPU_IDS (KVM_MAX_VCPUS 4096 x KVM_VCPU_ID_RATIO 4).
constexpr int64_t kVcpuMax = 16383;
// A window past ~31 years of trace is a typo, not a trace.
constexpr double kMaxSeconds = 1e9;
constexpr int64_t kMaxTop = 1000000;

Error Usage(std::string tag, std::string message, std::string hint) {
  return MakeError(kExitUsage, std::move(tag), std::move(message), std::move(hint));
}

std::optional<int64_t> Integer(const std::string& text) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

Result<double> Seconds(std::string_view option, const std::string& text) {
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  bool parsed = ec == std::errc() && p == text.data() + text.size() && !text.empty();
  if (!parsed || !std::isfinite(v) || v < 0 || v > kMaxSeconds) {
    return Usage("cli.bad-time", std::string(option) + " '" + text + "' is not a time in the trace",
                 "give seconds from the first event, a number from 0 to 1e9 (e.g. " + std::string(option) + " 2.5)");
  }
  return v;
}

Result<int64_t> Ranged(std::string_view option, const std::string& text, int64_t lo, int64_t hi,
                       std::string_view meaning) {
  auto v = Integer(text);
  if (!v || *v < lo || *v > hi) {
    return Usage("cli.bad-value", std::string(option) + " '" + text + "' is out of range",
                 std::string(option) + " takes " + std::string(meaning) + ", an integer from " + std::to_string(lo) +
                     " to " + std::to_string(hi));
  }
  return *v;
}

}  // namespace

void AddFilterOptions(CLI::App& app, FilterArgs* args, unsigned which, std::string_view top_help) {
  if (which & kFilterPid) {
    app.add_option((which & kFilterShortPid) ? "-p,--pid" : "--pid", args->pid,
                   "only this VM (host pid) or vCPU thread (tid), 1.." + std::to_string(kPidMax));
  }
  if (which & kFilterVcpu) app.add_option("--vcpu", args->vcpu, "only this vCPU index (0..16383)");
  if (which & kFilterReason) {
    app.add_option("--reason", args->reason,
                   "only this exit reason, any spelling (HLT, EPT_VIOLATION, npf, EXIT_IOIO …); an equivalent "
                   "of the other ISA is mapped (npf = EPT_VIOLATION, io = IO_INSTRUCTION, msr = MSR_READ + "
                   "MSR_WRITE)");
  }
  if (which & kFilterWindow) {
    app.add_option("--from", args->from, "start of the time window, seconds from the first event (>= 0)");
    app.add_option("--to", args->to, "end of the time window, seconds from the first event (> --from)");
  }
  if (which & kFilterTop) {
    app.add_option("--top", args->top,
                   top_help.empty() ? std::string("show only the N (>= 1) reasons with most exits per group")
                                    : std::string(top_help));
  }
}

Result<Filters> ParseFilters(const FilterArgs& a) {
  Filters f;
  if (!a.from.empty()) {
    auto v = Seconds("--from", a.from);
    if (!v.ok()) return v.error();
    f.from_s = *v;
  }
  if (!a.to.empty()) {
    auto v = Seconds("--to", a.to);
    if (!v.ok()) return v.error();
    f.to_s = *v;
  }
  if (f.from_s && f.to_s && *f.from_s >= *f.to_s) {
    return Usage("cli.empty-window", "--from " + a.from + " is not before --to " + a.to,
                 "the window is [--from, --to) in seconds from the first event: give --from < --to");
  }
  if (!a.top.empty()) {
    auto v = Ranged("--top", a.top, 1, kMaxTop, "the number of rows to keep (omit it for all)");
    if (!v.ok()) return v.error();
    f.top = static_cast<int>(*v);
  }
  if (!a.pid.empty()) {
    auto v = Ranged("--pid", a.pid, 1, kPidMax, "a host process id (the VMM, e.g. `pgrep qemu`) or thread id");
    if (!v.ok()) return v.error();
    f.pid = static_cast<int32_t>(*v);
  }
  if (!a.vcpu.empty()) {
    auto v = Ranged("--vcpu", a.vcpu, 0, kVcpuMax, "a vCPU index as KVM numbers them (0 for the first)");
    if (!v.ok()) return v.error();
    f.vcpu = static_cast<int32_t>(*v);
  }
  if (!a.reason.empty()) {
    f.reason_codes = ReasonCodesFromName(a.reason);
    if (!f.reason_codes.known()) {
      return Usage("cli.unknown-reason", "'" + a.reason + "' is not an exit reason name",
                   "use a name as `exitscope report` prints it: VMX HLT, EPT_VIOLATION, IO_INSTRUCTION, "
                   "MSR_WRITE …; SVM hlt, npf, io, msr …; or UNKNOWN(0x…)");
    }
    f.reason = a.reason;
  }
  return f;
}

Status CheckReasonForIsa(const Filters& f, Isa isa) {
  if (f.reason.empty() || isa == Isa::kUnknown || !f.reason_codes.of(isa).empty()) return Status::Ok();
  auto isa_name = [](Isa i) { return i == Isa::kVmx ? "VMX" : i == Isa::kSvm ? "SVM" : "arm64"; };
  const Isa from = !f.reason_codes.vmx.empty() ? Isa::kVmx : !f.reason_codes.svm.empty() ? Isa::kSvm : Isa::kArm64;
  std::string what =
      from == Isa::kArm64 || isa == Isa::kArm64
          ? std::string(" exit reason, and this trace is ") + isa_name(isa)
          : std::string(" exit reason with no ") + isa_name(isa) + " equivalent, and this trace is " + isa_name(isa);
  const char* hint = isa == Isa::kVmx ? "use a VMX name (CR_ACCESS, DR_ACCESS, EPT_VIOLATION, IO_INSTRUCTION, HLT …); "
                     : isa == Isa::kSvm ? "use an SVM name (read_cr4, write_dr7, npf, io, msr, hlt …); "
                                        : "use an arm64 name (SYS64, DABT_LOW, HVC64, WFx, IRQ …); ";
  return Usage("cli.reason-not-in-trace",
               "--reason " + f.reason + " is a" +
                   (from == Isa::kVmx   ? " VMX"
                    : from == Isa::kSvm ? "n SVM"
                                        : "n arm64") +
                   what,
               std::string(hint) + "`exitscope report` without --reason lists the trace's reasons");
}

namespace {

// --fail-if's METRIC by name; false when there is none such.
bool MetricFromName(const std::string& metric, DiffMetric* out) {
  static const std::pair<const char*, DiffMetric> kMetrics[] = {
      {"count", DiffMetric::kCount}, {"rate", DiffMetric::kRate}, {"mean", DiffMetric::kMean},
      {"p50", DiffMetric::kP50},     {"p99", DiffMetric::kP99},   {"time", DiffMetric::kTime}};
  bool found = false;
  for (const auto& [name, m] : kMetrics) {
    if (metric == name) *out = m, found = true;
  }
  return found;
}

// Why --fail-if's SUBJECT names no row (a reason, all, or KIND:KEY of a detail row); empty when it does.
std::string SubjectProblem(const std::string& subject) {
  if (size_t colon = subject.find(':'); colon != std::string::npos) {
    static const char* kKinds[] = {"msr",  "pio",    "mmio", "fast_mmio", "cr",      "hypercall", "userspace",
                                   "apic", "vector", "dr",   "cr_exit",   "io_exit", "ept"};
    const std::string kind = subject.substr(0, colon);
    if (std::none_of(std::begin(kKinds), std::end(kKinds), [&](const char* k) { return kind == k; }) ||
        colon + 1 == subject.size()) {
      return "'" + subject +
             "' is not KIND:KEY of a detail row (kinds: msr, pio, mmio, fast_mmio, cr, "
             "hypercall, userspace, apic, vector, dr, cr_exit, io_exit, ept)";
    }
  } else if (subject != "all" && subject != "total" && !ReasonCodesFromName(subject).known()) {
    return "'" + subject + "' is not an exit reason name, all, or KIND:KEY";
  }
  return {};
}

// VALUE: [+-]number then %, a duration unit, or nothing, into th->value and th->relative. Returns
// why it is not one, empty when it is.
std::string ParseThresholdValue(const std::string& value, const std::string& metric, DiffThreshold* th) {
  double v = 0;
  const char* begin = value.data() + (!value.empty() && value[0] == '+' ? 1 : 0);
  auto [end, ec] = std::from_chars(begin, value.data() + value.size(), v);
  if (ec != std::errc() || begin == value.data() + value.size() || !std::isfinite(v)) {
    return "'" + value + "' is not a number";
  }
  const std::string unit(end, value.data() + value.size());
  const bool duration = th->metric == DiffMetric::kMean || th->metric == DiffMetric::kP50 ||
                        th->metric == DiffMetric::kP99 || th->metric == DiffMetric::kTime;
  static const std::pair<const char*, double> kUnits[] = {{"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
  th->relative = unit == "%";
  if (!th->relative && !unit.empty()) {
    double scale = 0;
    for (const auto& [name, f] : kUnits) {
      if (unit == name) scale = f;
    }
    if (scale == 0 || !duration) {
      return "'" + unit + "' is not a unit of " + metric + (duration ? " (ns, us, ms, s or %)" : " (% or none)");
    }
    v *= scale;
  }
  th->value = v;
  return {};
}

}  // namespace

Result<DiffThreshold> ParseThreshold(const std::string& text) {
  const std::string grammar =
      "write SUBJECT.METRIC OP VALUE, e.g. 'HLT.p99 > +10%', 'all.time > +1ms', 'msr:0x6e0.count >= +50%': "
      "SUBJECT an exit reason (any spelling), all, or KIND:KEY of a detail row (msr:0x6e0, pio:0x40, "
      "userspace:KVM_EXIT_MMIO); METRIC count, rate, mean, p50, p99 or time; OP >, >=, <, <=; VALUE a change "
      "in % (+10%) or in the metric's unit (+2us for mean/p50/p99/time, exits for count, exits/s for rate)";
  auto bad = [&](const std::string& why) {
    return Usage("cli.bad-threshold", "--fail-if '" + text + "': " + why, grammar);
  };
  std::string t;
  for (char c : text) {
    if (c != ' ' && c != '\t') t += c;
  }
  size_t op = t.find_first_of("<>");
  if (op == std::string::npos) return bad("no comparison (>, >=, <, <=)");
  DiffThreshold th;
  th.text = text;
  th.greater = t[op] == '>';
  size_t value_at = op + 1;
  if (value_at < t.size() && t[value_at] == '=') th.or_equal = true, ++value_at;
  const std::string left = t.substr(0, op), value = t.substr(value_at);
  size_t dot = left.rfind('.');
  if (dot == std::string::npos || dot == 0) return bad("no SUBJECT.METRIC before the comparison");
  th.subject = left.substr(0, dot);
  const std::string metric = left.substr(dot + 1);
  if (!MetricFromName(metric, &th.metric)) return bad("unknown metric '" + metric + "'");
  if (std::string why = SubjectProblem(th.subject); !why.empty()) return bad(why);
  if (std::string why = ParseThresholdValue(value, metric, &th); !why.empty()) return bad(why);
  return th;
}

Result<uint64_t> ParseCount(std::string_view option, const std::string& text, uint64_t max, std::string_view meaning) {
  auto v = Ranged(option, text, 0, static_cast<int64_t>(max), meaning);
  if (!v.ok()) return v.error();
  return static_cast<uint64_t>(*v);
}

void SelectByFilters(const Filters& filters, ReportOptions* options) {
  options->pid = filters.pid;
  options->vcpu = filters.vcpu;
  options->from_s = filters.from_s;
  options->to_s = filters.to_s;
}

std::optional<int> ParseArgs(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return ExitOnParseError(app, e);
  }
  return std::nullopt;
}

int ExitOnParseError(const CLI::App& app, const CLI::ParseError& e) {
  if (e.get_exit_code() == 0) {  // --help, --version; `exitscope --help-export` takes the App instead
    return RecordHelpExport(app) ? 0 : app.exit(e);
  }
  // The option CLI11 names in its message ("Could not convert: --threads = -1"), longest name first.
  const CLI::Option* named = nullptr;
  size_t best = 0;
  std::string what = e.what();
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& n : o->get_lnames()) {
      std::string flag = "--" + n;
      if (flag.size() > best && what.find(flag) != std::string::npos) named = o, best = flag.size();
    }
    if (!named && o->get_lnames().empty() && o->get_snames().empty() && !o->get_name().empty() &&
        what.find(o->get_name()) != std::string::npos) {
      named = o;  // a positional ("FILE is required")
    }
  }
  std::string cmd = app.get_name();
  std::string hint = named ? named->get_name(false, true) + ": " + named->get_description() + " (`" + cmd +
                                 " --help` lists every option)"
                           : "`" + cmd + " --help` lists the options and their values";
  PrintError(MakeError(kExitUsage, "cli.bad-option", what, hint));
  return kExitUsage;
}

}  // namespace exitscope
