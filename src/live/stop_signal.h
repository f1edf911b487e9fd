// SIGINT/SIGTERM/SIGHUP end a live session cleanly: the handler only sets a flag, the session loop
// sees it (poll returns EINTR), stops tracing, finishes its output and removes its tracefs instance.
// SIGKILL cannot be caught: the next run removes the dead run's instance (RemoveStaleInstances).
#pragma once

namespace exitscope {

void InstallStopHandlers();
bool StopRequested();
int StopSignal();         // the signal that asked us to stop (0 when none)
void ClearStopRequest();  // a new session in the same process (tests)

}  // namespace exitscope
