// `exitscope top`: live exits/s per VM, vCPU and reason with handling-time percentiles, refreshed
// every -d seconds, from its own tracefs instance (live/live_exits); VMs named by their VMM's
// command line (analysis/vm_grouper.h ProcVmDirectory).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>

#include "analysis/top_aggregator.h"
#include "cli/command.h"
#include "cli/filter_options.h"
#include "cli/top_observe.h"
#include "live/live_exits.h"
#include "sources/live/tracefs_instance.h"
#include "live/stop_signal.h"
#include "pipeline/live_page_decoder.h"
#include "report/top_reporter.h"

namespace exitscope {
namespace {

std::string TopFooter() {
  return std::string(
             "Every -d seconds: exits/s per VM, per vCPU thread and per exit reason, with handling-time\n"
             "percentiles (kvm_exit to kvm_entry) over the interval. An exit counts in the interval its\n"
             "kvm_exit happens (one still being handled shows at once) and is timed in the interval its vCPU\n"
             "enters the guest again: a row's \"timed\" says how many times its percentiles are of, \"-\"\n"
             "when none. Traces in its own tracefs instance and removes it on exit (Ctrl-C, SIGTERM, -n).\n"
             "Events the kernel lost in an interval are shown per CPU with it: that interval's numbers are\n"
             "partial. VMs are named from their VMM's command line (QEMU -name, Firecracker --id,\n"
             "cloud-hypervisor/crosvm API socket, else uuid or comm-pid); vCPUs from the thread name\n"
             "(CPU n/KVM, fc_vcpu n, vcpun, crosvm_vcpun).\n\n") +
         kHelpLiveNeeds +
         "\n\n"
         "Examples:\n"
         "  sudo exitscope top                       # refresh every second until Ctrl-C\n"
         "  sudo exitscope top -d 5 -n 12 --rows 5   # one minute in 5 s steps\n"
         "  sudo exitscope top -p $(pidof qemu-system-x86_64) --reason HLT\n"
         "  sudo exitscope top --json -n 10 | jq '.reasons[0]'\n"
         "  sudo exitscope top --mode bpf            # counted in the kernel: cheapest per exit\n"
         "  sudo exitscope top --mode stats          # KVM's own counters: no tracing, coarse kinds\n\n"
         "Modes: tracefs (default) streams every event; bpf counts in the kernel per VM, thread and reason\n"
         "(log2 latency buckets, trips to the VMM); auto is bpf when it loads, else tracefs with the reason;\n"
         "stats reads KVM's own counters (exits, halt_exits, io_exits …: no reasons, no times) through\n"
         "the VMM's binary stats fds (KVM_GET_STATS_FD, per vCPU too) where root can reach them, else\n"
         "/sys/kernel/debug/kvm; each VM's line says which.\n\n"
         "Exit status: 0 done; 64 bad option (the hint names the valid values); 69 no tracefs (also a\n"
         "--tracefs that is not one) or no kvm events (module not loaded), --mode bpf that cannot load;\n"
         "74 I/O error; 77 permission denied (run as root).";
}

// What the command line gave, bound to the options before parsing.
struct TopArgs {
  double delay_s = 1.0;
  std::string tracefs, count_text, rows_text;
  FilterArgs filter_args;
  bool json = false;
  uint32_t buffer_kb = 4096;
  std::string mode = "tracefs";
};

void DeclareTopOptions(CLI::App& app, TopArgs* a) {
  app.add_option("-d,--delay", a->delay_s, "seconds between refreshes (0.05..3600)")->check(CLI::Range(0.05, 3600.0));
  app.add_option("-n,--count", a->count_text, "intervals to show, then exit (default 0: until Ctrl-C)");
  AddFilterOptions(app, &a->filter_args, kFilterPid | kFilterShortPid | kFilterReason);
  app.add_flag("--json", a->json, "one JSON object per interval and line (schema exitscope.top/1)");
  app.add_option("--rows", a->rows_text, "rows per table in text mode (default 15; 0: all)");
  app.add_option("-b,--buffer-size", a->buffer_kb, "ring buffer per CPU, KiB");
  app.add_option("--tracefs", a->tracefs, "tracefs mount point");
  app.add_option("--mode", a->mode, "tracefs, bpf, auto (bpf, else tracefs) or stats")
      ->check(CLI::IsMember({"tracefs", "bpf", "auto", "stats"}))
      ->capture_default_str();
}

// The options checked, as the loops take them.
Result<TopLoopOptions> ValidateTop(const TopArgs& a, const Filters& filters) {
  auto count =
      a.count_text.empty() ? Result<uint64_t>(0) : ParseCount("-n", a.count_text, 1000000, "a number of intervals");
  if (!count.ok()) return count.error();
  auto rows = a.rows_text.empty() ? Result<uint64_t>(15) : ParseCount("--rows", a.rows_text, 1000000, "rows per table");
  if (!rows.ok()) return rows.error();
  if (Isa host = HostIsa(); host != Isa::kUnknown) {
    if (Status st = CheckReasonForIsa(filters, host); !st.ok()) return st.error();
  }
  return TopLoopOptions{a.delay_s, *count, *rows, a.json, filters.pid.value_or(0), filters.reason};
}

// Events each CPU lost since the last interval (the session counts them from its start).
std::vector<uint64_t> LostSince(const LiveExitSession& capture, std::vector<uint64_t>* lost_before) {
  std::vector<uint64_t> lost;
  lost_before->resize(capture.loss().size(), 0);
  for (size_t cpu = 0; cpu < capture.loss().size(); ++cpu) {
    uint64_t total = capture.loss()[cpu].Lost();
    lost.push_back(total - std::min(total, (*lost_before)[cpu]));
    (*lost_before)[cpu] = total;
  }
  return lost;
}

// The default mode: every event streamed from our own tracefs instance, one table per interval.
int RunTopTracefsLoop(const TopArgs& a, const TopLoopOptions& loop, const Filters& filters) {
  TopAggregator agg(filters.reason);
  LiveExitOptions live;
  live.tracefs = a.tracefs;
  live.buffer_kb = a.buffer_kb;
  live.pid = filters.pid.value_or(0);
  live.events = TimingExitEvents();  // top shows no details: their records would only cost
  live.tap = &agg;                   // exits counted as they happen, timed as they end
  auto session = LiveExitSession::Start(live, &agg);
  if (!session.ok()) return PrintError(session.error());
  LiveExitSession& capture = **session;
  const bool json = a.json;
  const bool tty = !json && ::isatty(STDOUT_FILENO);
  std::vector<uint64_t> lost_before;
  auto last = std::chrono::steady_clock::now();
  for (uint64_t shown = 0; !StopRequested() && (loop.count == 0 || shown < loop.count);) {
    auto now = std::chrono::steady_clock::now();
    double elapsed = std::chrono::duration<double>(now - last).count();
    if (elapsed < a.delay_s) {
      int wait_ms = std::max(1, static_cast<int>((a.delay_s - elapsed) * 1000));
      agg.ResolveRunningVms();  // a VMM gone before the interval ends is still named
      if (Status st = capture.Poll(std::min(wait_ms, 50)); !st) return PrintError(st.error());
      continue;
    }
    last = now;
    if (Status st = capture.Collect(); !st) return PrintError(st.error());
    TopInterval t = agg.TakeInterval(elapsed, LostSince(capture, &lost_before), json ? 0 : loop.rows);
    for (const auto& c : capture.diagnostics().NonZero()) t.diagnostics[c.name] = c.count;
    std::string text = json ? RenderTopJson(t) + "\n" : RenderTopText(t);
    if (tty)
      text = "\x1b[H\x1b[2J" + text;  // clear only a terminal; pipes get plain text
    else if (!json)
      text += "\n";
    if (!WriteStdout(text) || !FlushStdout()) {
      break;  // the reader went away (EPIPE) or the disk is full: clean up as for Ctrl-C
    }
    ++shown;
  }
  if (Status st = capture.Stop(); !st) return PrintError(st.error());
  return FinishStdout(kExitOk, /*quiet_epipe=*/true);
}

}  // namespace

int RunTopCommand(int argc, char** argv) {
  CLI::App app{"exitscope top: VM exits on this KVM host, live", "exitscope top"};
  app.footer(TopFooter());
  TopArgs a;
  DeclareTopOptions(app, &a);
  if (auto rc = ParseArgs(app, argc, argv)) return *rc;
  auto filters = ParseFilters(a.filter_args);
  if (!filters.ok()) return PrintError(filters.error());
  auto loop = ValidateTop(a, *filters);
  if (!loop.ok()) return PrintError(loop.error());
  InstallStopHandlers();
  if (a.mode == "stats") return RunTopStatsLoop(*loop);
  if (a.mode == "bpf" || a.mode == "auto") {
    auto reader = BpfExitReader::Load({a.tracefs, loop->pid});
    if (reader.ok()) return RunTopBpfLoop(std::move(*reader), *loop);
    if (a.mode == "bpf") return PrintError(reader.error());
    std::fprintf(stderr, "exitscope top: %s; using tracefs mode\n", reader.error().message.c_str());
  }
  return RunTopTracefsLoop(a, *loop, *filters);
}

}  // namespace exitscope
