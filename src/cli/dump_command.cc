// Placeholder until the dump pipeline lands (issue 2); kept so the skeleton builds.
#include "cli/command.h"

namespace exitscope {

int RunDumpCommand(int argc, char** argv) {
  return PrintError(MakeError(kExitUnavailable, "cli.not-built", "'dump' is not built yet"));
}

}  // namespace exitscope
