// exitscope: where KVM guests lose time to VM exits. Dispatches to one subcommand.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/build_info.h"
#include "cli/command.h"
#include "cli/help_export.h"

namespace {

// exitscope(1) is generated from these and the command table (cli/help_export.h): keep them here only.
constexpr const char* kSummary = "where your KVM guests lose time to VM exits";
constexpr const char* kDescription =
    "`exitscope <command> --help` teaches each command.\n"
    "Inputs: trace.dat (trace-cmd record -e kvm), perf.data (perf record -e 'kvm:*'),\n"
    "and text from trace-cmd report, perf script or the kernel's trace file.";

void PrintUsage(FILE* out) {
  std::fprintf(out, "exitscope %s — %s\n\nusage: exitscope <command> [options] [FILE]\n\ncommands:\n",
               EXITSCOPE_VERSION, kSummary);
  for (const auto& c : exitscope::Commands()) {
    std::fprintf(out, "  %-8s %.*s\n", std::string(c.name).c_str(), static_cast<int>(c.summary.size()),
                 c.summary.data());
  }
  std::fprintf(out, "\n%s\n\n%s", kDescription, exitscope::ExitStatusText().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    PrintUsage(argc < 2 ? stderr : stdout);
    if (argc >= 2) return 0;
    return exitscope::PrintError(exitscope::MakeError(exitscope::kExitUsage, "cli.no-command", "no command given",
                                                      "e.g. `exitscope report trace.dat`; the commands are above"));
  }
  if (!std::strcmp(argv[1], "--version")) {
    const char* build = exitscope::BuildId();
    std::printf("exitscope %s%s%s%s\n", EXITSCOPE_VERSION, *build ? " (build " : "", build, *build ? ")" : "");
    return 0;
  }
  if (!std::strcmp(argv[1], "--help-export")) return exitscope::RunHelpExport(kSummary, kDescription);
  for (const auto& c : exitscope::Commands()) {
    if (c.name == argv[1]) {
      std::string self = std::string("exitscope ") + argv[1];
      argv[1] = self.data();
      return c.run(argc - 1, argv + 1);
    }
  }
  return exitscope::PrintError(exitscope::MakeError(exitscope::kExitUsage, "cli.unknown-command",
                                                    std::string("unknown command '") + argv[1] + "'",
                                                    "run `exitscope --help` for the list of commands"));
}
