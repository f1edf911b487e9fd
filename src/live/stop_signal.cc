#include "live/stop_signal.h"

#include <signal.h>

#include <csignal>
#include <initializer_list>

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

}  // namespace exitscope
