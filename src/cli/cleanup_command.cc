// `exitscope cleanup`: removes the tracefs instances (instances/exitscope-<pid>) that live commands
// killed with SIGKILL left behind — the exporter service's ExecStopPost, or by hand. Instances of
// running exitscope processes are kept. Every live command does the same when it starts.
#include <CLI/CLI.hpp>

#include <cstdio>

#include "cli/command.h"
#include "cli/filter_options.h"
#include "sources/live/tracefs_instance.h"

namespace exitscope {

int RunCleanupCommand(int argc, char** argv) {
  CLI::App app{"exitscope cleanup: remove tracefs instances left by killed exitscope runs", "exitscope cleanup"};
  app.footer(std::string("`record`, `top` and `serve` trace in their own tracefs instance, instances/exitscope-<pid>,\n"
                         "and remove it when they stop. A run killed with SIGKILL (or by the OOM killer) cannot: its\n"
                         "instance keeps its ring buffers (memory) and enabled events until removed. This removes\n"
                         "every such instance whose process is gone, and leaves those of running processes alone.\n"
                         "The systemd unit of the exporter runs it after the service stops (ExecStopPost).\n\n") +
             kHelpLiveNeeds +
             "\n\n"
             "Examples:\n"
             "  sudo exitscope cleanup                    # prints how many instances it removed\n"
             "  sudo exitscope cleanup -q --tracefs /sys/kernel/debug/tracing\n\n"
             "Exit status: 0 done (also when there was nothing to remove); 64 bad option; 69 no tracefs\n"
             "(also a --tracefs that is not one); 74 an instance could not be removed (a reader holds it\n"
             "open); 77 permission denied (run as root or with CAP_DAC_OVERRIDE).");
  std::string tracefs;
  bool quiet = false;
  app.add_option("--tracefs", tracefs, "tracefs mount point (default: found in /proc/mounts)");
  app.add_flag("-q,--quiet", quiet, "print nothing when it succeeds");
  if (auto rc = ParseArgs(app, argc, argv)) return *rc;
  if (!tracefs.empty()) {
    if (Status st = CheckTracefs(tracefs); !st.ok()) return PrintError(st.error());
  } else {
    auto found = FindTracefs();
    if (!found.ok()) return PrintError(found.error());
    tracefs = *found;
  }
  auto removed = RemoveStaleInstances(tracefs);
  if (!removed.ok()) return PrintError(removed.error());
  if (!quiet) {
    std::printf("exitscope cleanup: removed %d stale instance%s from %s/instances\n", *removed,
                *removed == 1 ? "" : "s", tracefs.c_str());
  }
  return FinishStdout(kExitOk);
}

}  // namespace exitscope
