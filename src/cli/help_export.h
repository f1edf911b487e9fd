// The one description of the command line that --help, the man pages and the shell completions all
// come from (issue 20). `exitscope --help-export` runs every command of Commands() with `--help`
// while export mode is on: instead of printing its help, ExitOnParseError hands the command's fully
// built CLI::App here, which records its options (names, value type, choices, default, whether it
// names a file), its description and help footer. Out: one JSON document
// (schema exitscope.cli/1) that scripts/gen_cli_docs.py turns into roff and bash/zsh completion at
// build time. A command that does not route --help through ExitOnParseError records nothing, and the
// export fails (exit 70) so the build says which command.
#pragma once

#include <string_view>

namespace CLI {
class App;
}

namespace exitscope {

// Every exit status the commands use (base/result.h sysexits codes, plus 141 for SIGPIPE) and what
// it means, as `exitscope --help` prints it; exitscope(1) lists the same rows.
std::string ExitStatusText();

// True (and the app recorded) while --help-export runs; false otherwise (print the help as usual).
bool RecordHelpExport(const CLI::App& app);

// `exitscope --help-export`: prints the JSON document; `version` is the program's version string.
int RunHelpExport(std::string_view program_summary, std::string_view program_description);

}  // namespace exitscope
