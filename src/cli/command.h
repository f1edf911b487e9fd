// The subcommand table. Each subcommand lives in its own src/cli/<name>_command.cc with its own help
// text and exposes one entry point; main.cc only dispatches. In: argv after the subcommand name.
// Out: a process exit code (sysexits.h values, see base/result.h).
#pragma once

#include <span>
#include <string_view>

#include "base/result.h"
#include "model/trace_meta.h"

namespace CLI {
class App;
}

namespace exitscope {

struct Command {
  std::string_view name;
  std::string_view summary;           // one line for `exitscope --help`
  int (*run)(int argc, char** argv);  // argv[0] is "exitscope <name>"
};

std::span<const Command> Commands();

// Prints "error: <message>" and "hint: <hint>" (with the stable tag) on stderr; returns error.code.
int PrintError(const Error& error);

// stdout, one path for every command that writes it. WriteStdout keeps the first write error and
// returns false from then on (a long output stops producing); FinishStdout, each such command's
// last step, flushes and turns a failed write into "error: cannot write the output: … [output.write]"
// with a hint and exit 74 (EX_IOERR): ENOSPC (/dev/full, a full disk), EBADF (stdout closed), EIO,
// EPIPE (the reader went away while SIGPIPE is ignored). Otherwise it returns `code`. SIGPIPE keeps
// its default elsewhere, so `exitscope … | head` ends quietly with 141 as coreutils do; `top`, which
// ignores SIGPIPE to clean up its tracefs instance, passes quiet_epipe to end the same way.
bool WriteStdout(std::string_view bytes);
bool FlushStdout();  // for outputs that must show now (top's intervals); false as WriteStdout
int FinishStdout(int code, bool quiet_epipe = false);

// --threads: 0 means one decoding thread per core, at most 8 (more stop paying off past memory
// bandwidth); any other value as given.
unsigned DecodeThreads(unsigned requested);
// "\rreading  42.0%" on stderr, flushed: the progress line of a long read. Capped at 100 %: a
// compressed file whose header understates its sizes is read past its stated end.
void PrintProgress(uint64_t done, uint64_t total);
// Blanks the progress line once the read is done, so what follows starts at column 0.
void ClearProgress();

// What -j does, in every command's --help.
inline constexpr const char* kThreadsHelp =
    "threads reading the input (default: one per core, up to 8; 1 = sequential): an uncompressed "
    "trace.dat is decoded in time slices and a perf.data in rounds on this many; a compressed "
    "trace.dat's CPUs are decompressed ahead on this many less one (at least one)";

// --tsc-khz N, the one parse every command reading a trace shares: converts a trace recorded with
// the x86-tsc clock (and no TSC2NSEC option) to ns. Out of range: a usage error (64).
void AddClockOptions(CLI::App& app, ClockOptions* clock);

// A usage Error (64) for `what` ("--from/--to") when the trace's times are not ns; else Ok.
Status RequireNsClock(const TraceMeta& meta, std::string_view what);

// Help paragraphs the subcommands share, so they teach the same words.
inline constexpr const char* kHelpInputs =
    "Inputs (detected by content): trace.dat from `trace-cmd record` (v6/v7, uncompressed, zlib or\n"
    "zstd) or `exitscope record`; perf.data from `perf record -e 'kvm:*'`";  // callers end the sentence
inline constexpr const char* kHelpPartial =
    "PARTIAL: the trace lost events (ring-buffer overruns, perf LOST records) or holds malformed\n"
    "records, so some exits are missing or untimed. The output is still printed: its first line says\n"
    "'PARTIAL RESULT: <what was lost>' and the diagnostics table lists every counter. Info counters\n"
    "(e.g. kvm_entry not recorded, exits open at the end of the trace) never make a result partial.";
inline constexpr const char* kHelpLiveNeeds =
    "Needs root (or CAP_DAC_OVERRIDE: tracefs is root's, mode 0700), tracefs mounted, and the kvm\n"
    "module loaded.";

// Entry points, one per subcommand file.
int RunReportCommand(int argc, char** argv);
int RunDumpCommand(int argc, char** argv);
int RunRecordCommand(int argc, char** argv);
int RunTopCommand(int argc, char** argv);
int RunBenchCommand(int argc, char** argv);
int RunAdviseCommand(int argc, char** argv);
int RunCleanupCommand(int argc, char** argv);
int RunTimelineCommand(int argc, char** argv);
int RunServeCommand(int argc, char** argv);
int RunDiffCommand(int argc, char** argv);

}  // namespace exitscope
