// The filter and count options the commands share (--from/--to, --top, --pid, --vcpu, --reason,
// counts such as dump --limit), parsed and validated in one place so every command answers a bad
// value alike: exit 64, the option named, and a hint naming the valid values. Values are read as
// text and checked here: CLI11's own conversion takes "nan", "inf" or "-1" without a word.
// In: argv through CLI11. Out: typed Filters or a usage Error.
#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "decode/exit_reasons.h"
#include "model/diff_model.h"
#include "base/result.h"

namespace exitscope {

struct ReportOptions;  // analysis/exit_aggregator.h

enum FilterOption : unsigned {
  kFilterWindow = 1,   // --from, --to
  kFilterTop = 2,      // --top
  kFilterPid = 4,      // --pid (-p with kFilterShortPid)
  kFilterVcpu = 8,     // --vcpu
  kFilterReason = 16,  // --reason
  kFilterShortPid = 32,
};

struct FilterArgs {
  std::string from, to, top, pid, vcpu, reason;  // as typed; empty = not given
};

struct Filters {
  std::optional<double> from_s, to_s;
  int top = 0;  // 0 = all
  std::optional<int32_t> pid, vcpu;
  std::string reason;  // as typed, validated against both ISAs' names
  ReasonCodes reason_codes;
};

// Adds the options in `which` (FilterOption bits) to `app`, storing their text in *args.
void AddFilterOptions(CLI::App& app, FilterArgs* args, unsigned which, std::string_view top_help = {});
Result<Filters> ParseFilters(const FilterArgs& args);
// Sets in *options what the filters select by thread and time (pid, vcpu, from, to); the reason
// and top-N are the caller's, as commands apply them differently (diff per side).
void SelectByFilters(const Filters& filters, ReportOptions* options);
// Once the trace's ISA is known: a usage error when --reason names nothing in it (an SVM-only
// reason such as read_cr4 on a VMX trace), so a filter never matches nothing in silence.
Status CheckReasonForIsa(const Filters& filters, Isa isa);
// A count option (dump --limit, top -n, --rows): an integer 0..max.
Result<uint64_t> ParseCount(std::string_view option, const std::string& text, uint64_t max, std::string_view meaning);
// A `diff --fail-if` threshold, SUBJECT.METRIC OP VALUE: "HLT.p99 > +10%", "all.time > +1ms",
// "msr:0x6e0.count >= +50%", "npf.rate < -20%". A usage error names the part that is wrong.
Result<DiffThreshold> ParseThreshold(const std::string& text);

// What a command returns when CLI11 refuses its argv: --help/--version print and give 0; anything
// else is "error: <CLI11's words> [cli.bad-option]" with the option's own help line as the hint
// (it names the valid values), and 64. Under `exitscope --help-export` --help records the App
// for the man pages and completions instead (cli/help_export.h).
int ExitOnParseError(const CLI::App& app, const CLI::ParseError& e);
// app.parse(argc, argv), and on CLI11's refusal ExitOnParseError's status: a command returns it
// when set (`if (auto rc = ParseArgs(app, argc, argv)) return *rc;`).
std::optional<int> ParseArgs(CLI::App& app, int argc, char** argv);

}  // namespace exitscope
