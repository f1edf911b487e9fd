// `exitscope top`: placeholder until the live decoding path lands.
#include "cli/command.h"

namespace exitscope {

int RunTopCommand(int argc, char** argv) {
  return PrintError(MakeError(kExitUnavailable, "cli.not-built", "'top' is not built yet"));
}

}  // namespace exitscope
