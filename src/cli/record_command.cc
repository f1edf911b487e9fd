// `exitscope record`: records kvm exit events on this host into a trace.dat v7 that both
// `exitscope report` and `trace-cmd report` read, in its own tracefs instance.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "cli/command.h"
#include "cli/filter_options.h"
#include "live/live_recorder.h"
#include "sources/live/tracefs_instance.h"
#include "live/stop_signal.h"

namespace exitscope {
namespace {

std::string RecordFooter() {
  return std::string(
             "Writes a trace.dat (v7, zstd) that `exitscope report`, `exitscope dump` and `trace-cmd\n"
             "report` read. Safe on a production host: it traces in its own tracefs instance\n"
             "(instances/exitscope-<pid>), never the top-level buffer kvm_stat/trace-cmd/perf use, removes\n"
             "it on exit (Ctrl-C, SIGTERM, --duration) and removes the leftovers of a run killed with\n"
             "SIGKILL. Events the kernel lost are reported per CPU on stderr, never hidden, even with -q.\n"
             "The default events are every kvm event exitscope models that this kernel has (x86 or arm64):\n"
             "kvm_exit and kvm_entry, so every exit can be timed, and the detail events that say why.\n\n") +
         kHelpLiveNeeds +
         "\n\n"
         "Examples:\n"
         "  sudo exitscope record -o trace.dat --duration 10   # all VMs for 10 s\n"
         "  sudo exitscope record -o vm.dat -p $(pidof qemu-system-x86_64)   # one VM until Ctrl-C\n"
         "  sudo exitscope record -o all.dat -e 'kvm:*' -b 8192   # every kvm event, bigger buffers\n"
         "  exitscope report trace.dat\n\n"
         "Exit status: 0 complete; 65 the recording is written but PARTIAL (the kernel lost events:\n"
         "use a larger -b or fewer -e); 64 bad option; 69 no tracefs or no kvm events (module not\n"
         "loaded); 74 cannot write the output or read tracefs; 77 permission denied (run as root).";
}

void DeclareRecordOptions(CLI::App& app, RecordOptions* opt, bool* quiet) {
  app.add_option("-o,--output", opt->output, "trace.dat to write")->required();
  app.add_option("-p,--pid", opt->pid, "only the threads of this process (the VM's QEMU)");
  app.add_option("--duration", opt->duration_s, "stop after S seconds (default: at Ctrl-C)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("-e,--event", opt->events,
                 "event to record, sys:name or a kvm event name; repeatable; kvm:* for all "
                 "(default: the kvm exit-related events)");
  app.add_option("-b,--buffer-size", opt->buffer_size_kb, "ring buffer per CPU, KiB")->check(CLI::Range(64u, 1u << 22));
  app.add_flag("--kallsyms", opt->kallsyms, "embed /proc/kallsyms (host symbols, a few MB)");
  app.add_option("--tracefs", opt->tracefs, "tracefs mount point (default: found in /proc/mounts)");
  app.add_flag("-q,--quiet", *quiet, "no progress messages");
}

// Losses are always shown, even with -q: a partial recording must not pass for a whole one.
// True when the kernel lost any event.
bool PrintLosses(const std::vector<CpuLoss>& loss) {
  for (size_t cpu = 0; cpu < loss.size(); ++cpu) {
    const CpuLoss& l = loss[cpu];
    if (l.Lost() == 0 && l.pages_with_missed == 0) continue;
    std::fprintf(stderr,
                 "warning: cpu %zu lost events: %llu overwritten, %llu dropped, %llu commit overrun, %llu left "
                 "unread, %llu pages flagged missed-events (%llu counted)\n",
                 cpu, static_cast<unsigned long long>(l.overrun), static_cast<unsigned long long>(l.dropped),
                 static_cast<unsigned long long>(l.commit_overrun), static_cast<unsigned long long>(l.unread),
                 static_cast<unsigned long long>(l.pages_with_missed),
                 static_cast<unsigned long long>(l.missed_events));
  }
  bool lost = false;
  for (const auto& l : loss) lost |= l.Lost() > 0 || l.pages_with_missed > 0;
  return lost;
}

}  // namespace

int RunRecordCommand(int argc, char** argv) {
  CLI::App app{"exitscope record: record VM exits on this KVM host into a trace.dat", "exitscope record"};
  app.footer(RecordFooter());
  RecordOptions opt;
  bool quiet = false;
  DeclareRecordOptions(app, &opt, &quiet);
  if (auto rc = ParseArgs(app, argc, argv)) return *rc;
  if (!opt.tracefs.empty()) {
    if (Status st = CheckTracefs(opt.tracefs); !st.ok()) return PrintError(st.error());
  }
  InstallStopHandlers();
  opt.on_started = [&](const std::string& dir) {
    if (!quiet) {
      std::fprintf(stderr, "exitscope record: tracing in %s%s; Ctrl-C to stop\n", dir.c_str(),
                   opt.duration_s > 0 ? fmt::format(" for {} s", opt.duration_s).c_str() : "");
    }
  };
  auto sum = RunRecord(opt);
  if (!sum.ok()) return PrintError(sum.error());
  if (!quiet) {
    std::fprintf(stderr,
                 "exitscope record: wrote %s: %llu events, %llu pages (%.1f MiB raw, %.1f MiB "
                 "file) in %.1f s; CPU used %.2f s user + %.2f s sys\n",
                 opt.output.c_str(), static_cast<unsigned long long>(sum->events_read),
                 static_cast<unsigned long long>(sum->pages), sum->bytes / 1048576.0, sum->file_bytes / 1048576.0,
                 sum->wall_s, sum->cpu_user_s, sum->cpu_sys_s);
  }
  if (PrintLosses(sum->loss)) {
    std::fprintf(stderr,
                 "hint: the recording is complete but partial; a larger -b or fewer -e events "
                 "keeps up\n");
    return kExitDataErr;
  }
  return kExitOk;
}

}  // namespace exitscope
