// `exitscope serve`: a Prometheus / OpenMetrics exporter of this host's VM exits. Aggregates
// continuously in its own tracefs instance (live/live_exits, the capture `top` uses) into
// ExitMetrics and answers GET /metrics (sinks/metrics_http_server); `--from-trace` serves a trace's
// totals instead, for dashboards, rule tests and CI.
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <set>

#include "analysis/exit_metrics.h"
#include "analysis/vm_grouper.h"
#include "cli/command.h"
#include "cli/filter_options.h"
#include "cli/serve_observe.h"
#include "cli/trace_metrics.h"
#include "live/live_exits.h"
#include "sources/live/tracefs_instance.h"
#include "live/stop_signal.h"
#include "report/openmetrics_reporter.h"
#include "sinks/metrics_http_server.h"

namespace exitscope {
namespace {

constexpr const char* kServeHelp =
    R"(Serves this host's VM exits to Prometheus: GET /metrics answers in the Prometheus text format
(0.0.4) or in OpenMetrics 1.0.0 when the scraper's Accept header asks for it (Prometheus does);
GET / points there; anything else gets 404 or 405. --mode chooses how exits are observed:
  tracefs (default)  kvm_exit/kvm_entry pairs read in its own tracefs instance
                     (instances/exitscope-<pid>), removed again on SIGINT/SIGTERM
  bpf                counted in the kernel per VM thread and reason (nothing copied out per exit);
                     the map is read once per --interval
  auto               bpf when its program loads, else tracefs (the reason on stderr)
  stats              KVM's own counters per VM, read once per --interval through the VMM's binary
                     stats fds (KVM_GET_STATS_FD, per vCPU too) where they can be reached, else
                     debugfs kvm/<pid>-<fd>: no tracing, but no exit reasons and no handling times
A metric a mode cannot supply is absent, never 0; exitscope_observer_info{mode} says which ran.

Metrics (prefix exitscope_, base units; counters only grow), tracefs mode:
  exits_total{domain,reason}               exits per VM and exit reason, each counted when its
                                           kvm_exit happens (its time when the vCPU re-enters)
  exit_seconds_total{domain,reason,stage}  handling time; stage="vmm": exits that went to the VMM
                                           (kvm_userspace_exit), stage="kernel": the others
  vcpu_exits_total{domain,vcpu}            exits per vCPU index
  exit_duration_seconds{domain,reason,le}  histogram, with --histogram, for the top reasons only
  vm_info{domain,uuid,vmm,vcpus}           what each VM is
  events_lost_total{cpu}                   events the kernel lost (counts are partial then)
  diagnostics_total{counter,severity}      anomalies of decoding and pairing
bpf mode: exits_total, vcpu_exits_total and vm_info as above; exit_seconds_total{domain,reason}
  without stage (kvm_exit to kvm_entry: kernel and VMM time together, a halted vCPU's wait
  included); vmm_trips_total{domain,reason} (kvm_userspace_exit during an exit); with --histogram
  the kernel's log2 buckets, le = 2^k - 1 ns for k = 8..29 (255 ns .. 0.54 s), exact for integer
  nanoseconds; no events_lost_total or diagnostics_total (no events are copied out).
stats mode: kvm_<counter>_total{domain} per KVM counter (exits, halt_exits, io_exits, mmio_exits,
  irq_exits, signal_exits, irq_window_exits, insn_emulation, hypercalls …; *_ns counters as
  kvm_<name>_seconds_total, e.g. kvm_halt_wait_seconds_total), kvm_vcpu_exits_total{domain,vcpu}
  (stats fds only), kvm_stats_source_info{domain,source} (stats-fd or debugfs).
All modes: build_info{version}, observer_info{mode}, exporter_cpu_seconds_total,
  exporter_resident_memory_bytes, scrapes_total, scrape_duration_seconds (the exporter itself).
domain is the VM's name: QEMU's -name (guest=NAME or the plain form), Firecracker's --id,
cloud-hypervisor's / crosvm's API socket, else the uuid, else "<comm>-<pid>"; vcpu is the index
the VMM put in the thread name (CPU n/KVM, fc_vcpu n, vcpun, crosvm_vcpun), else kvm_entry's.
No pid, tid, RIP, MSR or port is a label. A VM that ends keeps its series for --grace seconds.

Series per host (tracefs): VMs x (3 x reasons + vCPUs + 1) + CPUs + diagnostics + 7; with
--histogram also VMs x N x 13. E.g. 50 VMs of 4 vCPUs, 12 reasons each, 16 CPUs: 50 x 41 + 16 + 7
= 2,073 series (+ 3,250 with --histogram 5). bpf: VMs x (3 x reasons + vCPUs + 1) + 7, histogram
VMs x N x 25. stats: VMs x (counters + vCPUs + 1) + 7.

Safe by default: listens on 127.0.0.1 unless --listen says otherwise; at most 32 connections (16
per client address), 16 KiB of request line and headers each, closed after 5 s without a byte
or 15 s in all; request bodies are dropped.)";

constexpr const char* kServeExamples = R"(Examples:
  sudo exitscope serve                                   # 127.0.0.1:9464, until Ctrl-C
  sudo exitscope serve --listen 0.0.0.0:9464 --histogram # every interface, with the histogram
  sudo exitscope serve --mode bpf                        # counted in the kernel: cheapest per exit
  sudo exitscope serve --mode stats                      # KVM's own counters: no tracing at all
  exitscope serve --from-trace trace.dat --listen 127.0.0.1:9500   # a trace's totals, as if live
  curl -s localhost:9464/metrics | grep exitscope_exits_total
Prometheus: scrape_configs: [{job_name: exitscope, static_configs: [{targets: ['HOST:9464']}]}];
recording rules and alerts: deploy/prometheus/ in the source tree.

Exit status: 0 stopped by SIGINT/SIGTERM; 64 bad option; 65 --from-trace of a PARTIAL trace is
served but exits 65 when stopped; 66 trace missing; 69 no tracefs, no kvm events, --mode bpf whose
program cannot load, --mode stats with neither stats fds nor debugfs, or the address cannot be
bound; 77 permission denied (run as root for live).)";

// What the command line gave, bound to the options before parsing.
struct ServeArgs {
  std::string listen = "127.0.0.1:9464", from_trace, tracefs;
  double interval_s = 1.0, grace_s = 300;
  bool histogram = false;
  size_t histogram_reasons = 5;
  uint32_t buffer_kb = 4096;
  std::string mode = "tracefs";
  FilterArgs filter_args;
  ClockOptions clock;
};

void DeclareServeOptions(CLI::App& app, ServeArgs* a) {
  app.add_option("--listen", a->listen, "ADDR:PORT to listen on (numeric; [::1]:PORT for IPv6)")->capture_default_str();
  app.add_option("--from-trace", a->from_trace, "serve this trace's totals instead of the live host");
  app.add_flag("--histogram", a->histogram, "export exit_duration_seconds for the top reasons");
  app.add_option("--histogram-reasons", a->histogram_reasons, "how many reasons get the histogram")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  app.add_option("--interval", a->interval_s,
                 "seconds between reads of the ring buffer, BPF map or KVM counters (0.1..60)")
      ->check(CLI::Range(0.1, 60.0))
      ->capture_default_str();
  app.add_option("--grace", a->grace_s, "seconds a VM that ended keeps its series")
      ->check(CLI::Range(0.0, 86400.0))
      ->capture_default_str();
  AddFilterOptions(app, &a->filter_args, kFilterPid | kFilterShortPid);
  app.add_option("-b,--buffer-size", a->buffer_kb, "ring buffer per CPU, KiB")->check(CLI::Range(64u, 1u << 22));
  app.add_option("--tracefs", a->tracefs, "tracefs mount point");
  app.add_option("--mode", a->mode, "tracefs, bpf, auto (bpf, else tracefs) or stats (live only)")
      ->check(CLI::IsMember({"tracefs", "bpf", "auto", "stats"}))
      ->capture_default_str();
  AddClockOptions(app, &a->clock);
}

// --from-trace: a trace's totals, served until SIGINT/SIGTERM.
int ServeTrace(const ServeArgs& a, Served& served) {
  auto tm = MetricsOfTrace(a.from_trace, a.clock);
  if (!tm.ok()) return PrintError(tm.error());
  served.body = [&](const ExpositionOptions& o, const ExporterSelf& self) {
    return RenderExposition(*tm->metrics, tm->diagnostics, &self, o);
  };
  auto server = MetricsHttpServer::Start(a.listen, [&](std::string_view accept) { return served.Render(accept); });
  if (!server.ok()) return PrintError(server.error());
  std::fprintf(stderr, "exitscope serve: %s's totals on http://%s/metrics (port %u); Ctrl-C to stop\n",
               a.from_trace.c_str(), a.listen.c_str(), (*server)->port());
  while (!StopRequested()) ::usleep(100 * 1000);
  return tm->partial ? kExitDataErr : kExitOk;
}

// One interval's exits into the metrics; every few rounds /proc is re-read for pid reuse and ended
// VMs (not per exit), and the series of VMs gone longer than the grace dropped.
Status CollectInterval(LiveExitSession& capture, ExitMetrics& live_metrics, ProcVmDirectory& vms, Served& served,
                       std::vector<DiagnosticCounter>& diagnostics, int round, uint64_t grace_ns) {
  constexpr int kRevalidateEvery = 10;
  std::lock_guard<std::mutex> lock(served.mu);
  if (Status st = capture.Collect(); !st) return st;
  for (size_t cpu = 0; cpu < capture.loss().size(); ++cpu)
    live_metrics.SetLost(static_cast<int32_t>(cpu), capture.loss()[cpu].Lost());
  diagnostics = capture.diagnostics().NonZero();
  if (round % kRevalidateEvery == 0) {
    vms.Revalidate();
    live_metrics.ForgetThreads();
    std::set<std::string> alive;
    for (const auto& [key, vm] : vms.vms())
      if (vm.alive) alive.insert(vm.domain);
    live_metrics.Prune(alive, SteadyNowNs(), grace_ns);
  }
  return {};
}

// The live host: exits traced in an instance of our own, served until SIGINT/SIGTERM.
int ServeLive(const ServeArgs& a, const Filters& filters, Served& served) {
  ProcVmDirectory vms;
  ExitMetrics live_metrics(NamerOf(vms), ExitCounting::kAtKvmExit);
  std::vector<DiagnosticCounter> diagnostics;
  served.body = [&](const ExpositionOptions& o, const ExporterSelf& self) {
    return RenderExposition(live_metrics, diagnostics, &self, o);
  };
  LiveExitOptions live;
  live.tracefs = a.tracefs;
  live.buffer_kb = a.buffer_kb;
  live.pid = filters.pid.value_or(0);
  live.events = TimingExitEvents();  // no detail is exported: their records would only cost
  live.tap = &live_metrics;          // exits counted as they happen, timed as they end
  auto session = LiveExitSession::Start(live, &live_metrics);
  if (!session.ok()) return PrintError(session.error());
  LiveExitSession& capture = **session;
  auto server = MetricsHttpServer::Start(a.listen, [&](std::string_view accept) { return served.Render(accept); });
  if (!server.ok()) return PrintError(server.error());
  std::fprintf(stderr, "exitscope serve: tracing in %s, metrics on http://%s/metrics (port %u); Ctrl-C to stop\n",
               capture.instance_dir().c_str(), a.listen.c_str(), (*server)->port());
  const uint64_t grace_ns = static_cast<uint64_t>(a.grace_s * 1e9);
  auto last = std::chrono::steady_clock::now();
  for (int round = 0; !StopRequested();) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - last).count();
    if (elapsed < a.interval_s) {
      vms.ResolveRunningVms();  // a VMM gone before the interval ends is still named
      if (Status st = capture.Poll(std::max(1, std::min(50, static_cast<int>((a.interval_s - elapsed) * 1000)))); !st)
        return PrintError(st.error());
      continue;
    }
    last = std::chrono::steady_clock::now();
    if (Status st = CollectInterval(capture, live_metrics, vms, served, diagnostics, ++round, grace_ns); !st)
      return PrintError(st.error());
  }
  server->reset();  // no scrape may read the metrics while the capture goes
  if (Status st = capture.Stop(); !st) return PrintError(st.error());
  return kExitOk;
}

}  // namespace

int RunServeCommand(int argc, char** argv) {
  CLI::App app{"exitscope serve: this host's VM exits for Prometheus (GET /metrics)", "exitscope serve"};
  app.footer(std::string(kServeHelp) + "\n\n" + kHelpLiveNeeds + " (not for --from-trace)\n\n" + kServeExamples);
  ServeArgs a;
  DeclareServeOptions(app, &a);
  if (auto rc = ParseArgs(app, argc, argv)) return *rc;
  auto filters = ParseFilters(a.filter_args);
  if (!filters.ok()) return PrintError(filters.error());
  Served served;
  served.expo.histogram_reasons = a.histogram ? a.histogram_reasons : 0;
  InstallStopHandlers();
  if (!a.from_trace.empty()) {
    if (a.mode != "tracefs")
      return PrintError(MakeError(kExitUsage, "serve.mode-with-trace", "--mode " + a.mode + " watches the live host",
                                  "leave --mode out with --from-trace"));
    return ServeTrace(a, served);
  }
  ServeLoopOptions loop{a.listen, a.interval_s, static_cast<uint64_t>(a.grace_s * 1e9), filters->pid.value_or(0)};
  if (a.mode == "stats") return RunServeStatsLoop(loop, served);
  if (a.mode == "bpf" || a.mode == "auto") {
    auto reader = BpfExitReader::Load({a.tracefs, loop.pid});
    if (reader.ok()) return RunServeBpfLoop(std::move(*reader), loop, served);
    if (a.mode == "bpf") return PrintError(reader.error());
    std::fprintf(stderr, "exitscope serve: %s; using tracefs mode\n", reader.error().message.c_str());
  }
  served.expo.observer_mode = "tracefs";
  return ServeLive(a, *filters, served);
}

}  // namespace exitscope
