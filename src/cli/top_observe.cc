#include "cli/top_observe.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "cli/command.h"
#include "live/stop_signal.h"
#include "observe/bpf_exit_table.h"
#include "observe/kvm_stats_fd.h"
#include "observe/stats_top.h"

namespace exitscope {
namespace {

bool Show(std::string text, bool json) {
  if (!json && ::isatty(STDOUT_FILENO)) {
    text = "\x1b[H\x1b[2J" + text;
  } else if (!json) {
    text += "\n";
  }
  return WriteStdout(text) && FlushStdout();
}

}  // namespace

int RunTopBpfLoop(std::unique_ptr<BpfExitReader> reader, const TopLoopOptions& o) {
  BpfExitTable table(o.reason);
  auto last = std::chrono::steady_clock::now();
  for (uint64_t shown = 0; o.count == 0 || shown < o.count; ++shown) {
    double elapsed = WaitInterval(o.delay_s, &last, [&] { table.ResolveRunningVms(); });
    auto snap = reader->Snapshot();
    if (!snap.ok()) return PrintError(snap.error());
    BpfInterval t = table.TakeInterval(*snap, elapsed, o.json ? 0 : o.rows);
    if (!Show(o.json ? RenderBpfTopJson(t) + "\n" : RenderBpfTopText(t), o.json)) break;
    if (StopRequested()) break;  // the partial interval up to Ctrl-C was shown
  }
  reader.reset();  // detaches the program and frees its maps
  return FinishStdout(kExitOk, /*quiet_epipe=*/true);
}

int RunTopStatsLoop(const TopLoopOptions& o) {
  std::string why_not_fd;
  std::map<int, int> fd_pids;  // VMMs read through their stats fds (kvm_stats_fd.h)
  auto first = ReadKvmStats({}, &why_not_fd, &fd_pids);
  if (!first.ok()) return PrintError(first.error());
  if (!why_not_fd.empty())
    std::fprintf(stderr, "exitscope top: KVM stats fd not reachable (%s); debugfs for that VM\n", why_not_fd.c_str());
  StatsTopTable table(o.pid);
  (void)table.TakeInterval(*first, 0);  // the baseline: intervals show growth from here
  auto last = std::chrono::steady_clock::now();
  for (uint64_t shown = 0; o.count == 0 || shown < o.count; ++shown) {
    double elapsed = WaitInterval(o.delay_s, &last);
    auto now = ReadKvmStats({}, nullptr, &fd_pids);
    if (!now.ok()) return PrintError(now.error());
    StatsInterval t = table.TakeInterval(*now, elapsed);
    if (!Show(o.json ? RenderStatsTopJson(t) + "\n" : RenderStatsTopText(t, o.rows), o.json)) break;
    if (StopRequested()) break;
  }
  return FinishStdout(kExitOk, /*quiet_epipe=*/true);
}

}  // namespace exitscope
