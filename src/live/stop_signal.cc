#include "live/stop_signal.h"

#include <signal.h>

#include <algorithm>
#include <csignal>
#include <initializer_list>
#include <thread>

namespace exitscope {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void OnStop(int sig) { g_stop_signal = sig; }

}  // namespace

void InstallStopHandlers() {
  struct sigaction sa {};
  sa.sa_handler = OnStop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: a blocking poll must return so the loop can stop
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);  // `exitscope top | head` ends through EPIPE, which cleans up
}

bool StopRequested() { return g_stop_signal != 0; }
int StopSignal() { return g_stop_signal; }
void ClearStopRequest() { g_stop_signal = 0; }

double WaitInterval(double interval_s, std::chrono::steady_clock::time_point* last, const std::function<void()>& tick) {
  while (!StopRequested()) {
    auto now = std::chrono::steady_clock::now();
    double elapsed = std::chrono::duration<double>(now - *last).count();
    if (elapsed >= interval_s) {
      *last = now;
      return elapsed;
    }
    if (tick) tick();
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::max(1, std::min(50, static_cast<int>((interval_s - elapsed) * 1000)))));
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - *last).count();
}

}  // namespace exitscope
