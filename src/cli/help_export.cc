#include "cli/help_export.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "base/json_schema.h"
#include "cli/command.h"
#include "decode/exit_reasons.h"

namespace exitscope {
namespace {

struct ExitStatusDoc {
  int code;
  const char* name;
  const char* meaning;
};

// base/result.h's codes; 141 is the shell's 128 + SIGPIPE (signal 13).
constexpr ExitStatusDoc kExitStatuses[] = {
    {kExitOk, "OK", "success: the whole result was printed or written"},
    {1, "THRESHOLD", "diff only: a --fail-if threshold tripped (the comparison was printed)"},
    {kExitUsage, "EX_USAGE", "bad command line: unknown option, value out of range (the hint names the valid ones)"},
    {kExitDataErr, "EX_DATAERR",
     "PARTIAL result (printed; the trace lost events or holds malformed records) or unreadable data"},
    {kExitNoInput, "EX_NOINPUT", "an input file is missing, a directory, or a terminal given as '-'"},
    {kExitUnavailable, "EX_UNAVAILABLE", "no tracefs, no kvm trace events or no /dev/kvm on this host"},
    {kExitSoftware, "EX_SOFTWARE", "internal error: an exitscope bug (a failed CHECK); please report it"},
    {kExitIoErr, "EX_IOERR", "an output could not be written (full disk, closed stdout) or tracefs not read"},
    {kExitNoPerm, "EX_NOPERM", "permission denied (a file, tracefs, /dev/kvm): run as root or fix the mode"},
    {141, "SIGPIPE", "the reader of the output went away (`exitscope ... | head`), as coreutils"},
};

bool export_mode = false;
nlohmann::ordered_json* recorded = nullptr;  // the current command's entry while it runs

// CLI11's validator descriptions ride on the type name: "TEXT:{reason,vm,vcpu}", "TEXT:FILE",
// "UINT:INT in [64 - 4194304]". The base type is before the first ':'.
nlohmann::ordered_json DescribeOption(const CLI::Option& o) {
  nlohmann::ordered_json j;
  std::vector<std::string> names;
  for (const auto& s : o.get_snames()) names.push_back("-" + s);
  for (const auto& l : o.get_lnames()) names.push_back("--" + l);
  const bool positional = names.empty();
  const bool flag = !positional && o.get_expected_max() == 0;  // add_flag: takes no value
  j["names"] = names;
  j["positional"] = positional;
  if (positional) j["name"] = o.get_name();
  j["flag"] = flag;
  j["required"] = o.get_required();
  j["repeatable"] = !flag && o.get_items_expected_max() > 1;
  std::string type = o.get_type_name();
  std::string base = type.substr(0, type.find(':'));
  std::vector<std::string> choices;
  std::smatch set;
  if (std::regex_search(type, set, std::regex(":\\{([^}]*)\\}"))) {
    std::string list = set[1];
    for (size_t at = 0; at <= list.size();) {
      size_t comma = list.find(',', at);
      if (comma == std::string::npos) comma = list.size();
      if (comma > at) choices.push_back(list.substr(at, comma - at));
      at = comma + 1;
    }
  }
  bool names_file = type.find(":FILE") != std::string::npos || o.get_option_text() == "FILE" ||
                    (positional && o.get_name() == "FILE");
  // --reason takes an exit reason name: the names both ISAs' tables know (VMX vmx.h, SVM svm.h).
  for (const auto& l : o.get_lnames()) {
    if (l != "reason") continue;
    for (Isa isa : {Isa::kVmx, Isa::kSvm}) {
      for (uint32_t code = 0; code < 0x500; ++code) {
        std::string n = ExitReasonName(isa, code);
        if (n.rfind("UNKNOWN", 0) != 0 && std::find(choices.begin(), choices.end(), n) == choices.end()) {
          choices.push_back(n);
        }
      }
    }
    j["open_choices"] = true;  // other spellings (npf, EXIT_IOIO) are accepted too
  }
  if (!flag) j["value"] = o.get_option_text().empty() ? (base.empty() ? "VALUE" : base) : o.get_option_text();
  j["choices"] = choices;
  j["file"] = names_file || (!flag && choices.empty() && base == "TEXT");
  j["default"] = o.get_default_str();
  j["description"] = o.get_description();
  return j;
}

}  // namespace

std::string ExitStatusText() {
  std::string out = "exit status:\n";
  for (const auto& s : kExitStatuses) out += fmt::format("  {:<4} {}\n", s.code, s.meaning);
  return out;
}

bool RecordHelpExport(const CLI::App& app) {
  if (!export_mode || !recorded) return false;
  nlohmann::ordered_json& c = *recorded;
  c["title"] = app.get_description();
  c["footer"] = app.get_footer();
  c["help"] = app.help();
  c["options"] = nlohmann::ordered_json::array();
  for (const CLI::Option* o : app.get_options()) c["options"].push_back(DescribeOption(*o));
  return true;
}

int RunHelpExport(std::string_view program_summary, std::string_view program_description) {
  nlohmann::ordered_json doc;
  TagSchema(&doc, "cli", 1);
  doc["program"] = "exitscope";
  doc["version"] = EXITSCOPE_VERSION;
  doc["summary"] = program_summary;
  doc["description"] = program_description;
  doc["exit_statuses"] = nlohmann::ordered_json::array();
  for (const auto& s : kExitStatuses) {
    doc["exit_statuses"].push_back({{"code", s.code}, {"name", s.name}, {"meaning", s.meaning}});
  }
  doc["commands"] = nlohmann::ordered_json::array();
  export_mode = true;
  for (const auto& cmd : Commands()) {
    nlohmann::ordered_json c;
    c["name"] = cmd.name;
    c["summary"] = cmd.summary;
    recorded = &c;
    std::string self = "exitscope " + std::string(cmd.name);
    std::string help = "--help";
    char* argv[] = {self.data(), help.data(), nullptr};
    int rc = cmd.run(2, argv);
    recorded = nullptr;
    if (rc != 0 || !c.contains("options")) {
      return PrintError(
          MakeError(kExitSoftware, "cli.help-export",
                    "`" + self + " --help` did not reach ExitOnParseError (status " + std::to_string(rc) + ")",
                    "catch CLI::ParseError with `return ExitOnParseError(app, e);` as the other "
                    "commands do, so its man page and completion can be generated"));
    }
    doc["commands"].push_back(std::move(c));
  }
  export_mode = false;
  WriteStdout(doc.dump(1) + "\n");
  return FinishStdout(kExitOk);
}

}  // namespace exitscope
