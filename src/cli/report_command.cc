// Placeholder until the report pipeline lands (issue 2); kept so the skeleton builds.
#include "cli/command.h"

namespace exitscope {

int RunReportCommand(int argc, char** argv) {
  return PrintError(MakeError(kExitUnavailable, "cli.not-built", "'report' is not built yet"));
}

}  // namespace exitscope
