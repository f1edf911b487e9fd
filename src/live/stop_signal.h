// SIGINT/SIGTERM/SIGHUP end a live session cleanly: the handler only sets a flag, the session loop
// sees it (poll returns EINTR), stops tracing, finishes its output and removes its tracefs instance.
// SIGKILL cannot be caught: the next run removes the dead run's instance (RemoveStaleInstances).
#pragma once

#include <chrono>
#include <functional>

namespace exitscope {

void InstallStopHandlers();
bool StopRequested();
int StopSignal();         // the signal that asked us to stop (0 when none)
void ClearStopRequest();  // a new session in the same process (tests)

// Sleeps until `interval_s` has passed since *last, in steps of at most 50 ms so a stop request is
// seen, calling `tick` (if any) every step; then sets *last to now. Returns the seconds since the
// old *last (fewer than `interval_s` when a stop was requested, *last then unchanged).
double WaitInterval(double interval_s, std::chrono::steady_clock::time_point* last,
                    const std::function<void()>& tick = {});

}  // namespace exitscope
