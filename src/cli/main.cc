// exitscope: where KVM guests lose time to VM exits. Dispatches to one subcommand.
#include <cstdio>
#include <cstring>
#include <string>

#include "cli/command.h"

namespace {

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "exitscope %s — where your KVM guests lose time to VM exits\n\n"
               "usage: exitscope <command> [options] [FILE]\n\ncommands:\n",
               EXITSCOPE_VERSION);
  for (const auto& c : exitscope::Commands()) {
    std::fprintf(out, "  %-8s %.*s\n", std::string(c.name).c_str(), static_cast<int>(c.summary.size()),
                 c.summary.data());
  }
  std::fprintf(out,
               "\n`exitscope <command> --help` teaches each command.\n"
               "Inputs: trace.dat (trace-cmd record -e kvm), perf.data (perf record -e 'kvm:*'),\n"
               "and text from trace-cmd report, perf script or the kernel's trace file.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    PrintUsage(argc < 2 ? stderr : stdout);
    if (argc >= 2) return 0;
    return exitscope::PrintError(exitscope::MakeError(exitscope::kExitUsage, "cli.no-command", "no command given",
                                                      "e.g. `exitscope report trace.dat`; the commands are above"));
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("exitscope %s\n", EXITSCOPE_VERSION);
    return 0;
  }
  for (const auto& c : exitscope::Commands()) {
    if (c.name == argv[1]) {
      std::string self = std::string("exitscope ") + argv[1];
      argv[1] = self.data();
      return c.run(argc - 1, argv + 1);
    }
  }
  return exitscope::PrintError(exitscope::MakeError(
      exitscope::kExitUsage, "cli.unknown-command", std::string("unknown command '") + argv[1] + "'",
      "run `exitscope --help` for the list of commands"));
}
