// The subcommand table. Each subcommand lives in its own src/cli/<name>_command.cc with its own help
// text and exposes one entry point; main.cc only dispatches. In: argv after the subcommand name.
// Out: a process exit code (sysexits.h values, see model/result.h).
#pragma once

#include <span>
#include <string_view>

#include "model/result.h"

namespace exitscope {

struct Command {
  std::string_view name;
  std::string_view summary;  // one line for `exitscope --help`
  int (*run)(int argc, char** argv);  // argv[0] is "exitscope <name>"
};

std::span<const Command> Commands();

// Prints "error: <message>" and "hint: <hint>" (with the stable tag) on stderr; returns error.code.
int PrintError(const Error& error);

// Entry points, one per subcommand file.
int RunReportCommand(int argc, char** argv);
int RunDumpCommand(int argc, char** argv);
int RunRecordCommand(int argc, char** argv);
int RunTopCommand(int argc, char** argv);
int RunBenchCommand(int argc, char** argv);
int RunAdviseCommand(int argc, char** argv);

}  // namespace exitscope
