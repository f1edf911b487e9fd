#include "cli/serve_observe.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <set>

#include "analysis/vm_grouper.h"
#include "cli/command.h"
#include "live/stop_signal.h"
#include "observe/counted_tracker.h"
#include "observe/kvm_stats_fd.h"

namespace exitscope {
namespace {

ExporterSelf SelfFigures(uint64_t scrapes) {
  ExporterSelf s;
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  s.cpu_seconds = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  s.resident_bytes = resident * static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  s.scrapes = scrapes;
  return s;
}

std::set<std::string> AliveDomains(ProcVmDirectory& vms) {
  vms.Revalidate();
  std::set<std::string> alive;
  for (const auto& [key, vm] : vms.vms())
    if (vm.alive) alive.insert(vm.domain);
  return alive;
}

// Serves `served` on o.listen while `collect` runs once per interval and `tick` (if any) while it
// waits; stops on SIGINT/SIGTERM.
int ServeLoop(const ServeLoopOptions& o, Served& served, const char* what, const std::function<Status(int)>& collect,
              const std::function<void()>& tick = {}) {
  auto server = MetricsHttpServer::Start(o.listen, [&](std::string_view accept) { return served.Render(accept); });
  if (!server.ok()) return PrintError(server.error());
  std::fprintf(stderr, "exitscope serve: %s, metrics on http://%s/metrics (port %u); Ctrl-C to stop\n", what,
               o.listen.c_str(), (*server)->port());
  auto last = std::chrono::steady_clock::now();
  for (int round = 1; !StopRequested(); ++round) {
    if (Status st = collect(round); !st) return PrintError(st.error());
    WaitInterval(o.interval_s, &last, tick);
  }
  server->reset();
  return kExitOk;
}

}  // namespace

VmNameFn NamerOf(ProcVmDirectory& vms) {
  return [&vms](int32_t tid, int32_t vcpu_id) {
    const LiveVm& vm = vms.VmOf(tid);
    ExitVmName n;
    n.domain = vm.domain;
    n.uuid = vm.identity.uuid;
    n.vmm = vm.identity.vmm;
    n.vcpu = vms.VcpuOf(tid, vcpu_id).value_or(-1);
    return n;
  };
}

uint64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

Exposition Served::Render(std::string_view accept) {
  ExpositionOptions o = expo;
  o.format = ExpositionFormatForAccept(accept);
  std::lock_guard<std::mutex> lock(mu);
  ExporterSelf self = SelfFigures(++scrapes);
  return Exposition{body(o, self), std::string(ExpositionContentType(o.format))};
}

int RunServeBpfLoop(std::unique_ptr<BpfExitReader> reader, const ServeLoopOptions& o, Served& served) {
  constexpr int kRevalidateEvery = 10;  // /proc is re-read every few rounds, not per read
  ProcVmDirectory vms;
  Log2ExitMetrics metrics;
  BpfMetricsTracker tracker(NamerOf(vms));
  served.body = [&](const ExpositionOptions& eo, const ExporterSelf& self) {
    return RenderLog2Exposition(metrics, &self, eo);
  };
  auto collect = [&](int round) -> Status {
    auto snap = reader->Snapshot();
    if (!snap.ok()) return snap.error();
    std::lock_guard<std::mutex> lock(served.mu);
    tracker.Add(*snap, &metrics);
    if (round % kRevalidateEvery == 0) {
      tracker.ForgetThreads();
      PruneDomains(&metrics.domains, AliveDomains(vms), SteadyNowNs(), o.grace_ns);
    }
    return {};
  };
  // A VMM gone before the interval ends is still named (vms is only read on this thread).
  int rc = ServeLoop(o, served, "counting in the kernel (BPF)", collect, [&] { vms.ResolveRunningVms(); });
  reader.reset();  // detaches the program and frees its maps
  return rc;
}

int RunServeStatsLoop(const ServeLoopOptions& o, Served& served) {
  std::string why_not_fd;
  std::map<int, int> fd_pids;  // VMMs read through their stats fds (kvm_stats_fd.h)
  auto first = ReadKvmStats({}, &why_not_fd, &fd_pids);
  if (!first.ok()) return PrintError(first.error());
  if (!why_not_fd.empty())
    std::fprintf(stderr, "exitscope serve: KVM stats fd not reachable (%s); debugfs for that VM\n", why_not_fd.c_str());
  ProcVmDirectory vms;
  KvmStatMetrics metrics;
  KvmStatTracker tracker(NamerOf(vms));
  served.body = [&](const ExpositionOptions& eo, const ExporterSelf& self) {
    return RenderKvmStatExposition(metrics, &self, eo);
  };
  auto collect = [&](int round) -> Status {
    auto now = round == 1 ? std::move(first) : ReadKvmStats({}, nullptr, &fd_pids);
    if (!now.ok()) return now.error();
    if (o.pid > 0) std::erase_if(*now, [&](const KvmVmCounters& vm) { return vm.pid != o.pid; });
    std::lock_guard<std::mutex> lock(served.mu);
    tracker.Add(*now, &metrics);
    PruneDomains(&metrics.domains, AliveDomains(vms), SteadyNowNs(), o.grace_ns);
    return {};
  };
  return ServeLoop(o, served, "reading KVM's own counters", collect);
}

}  // namespace exitscope
