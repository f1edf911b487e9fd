// `serve --mode bpf` and `serve --mode stats`: the collection loops of the two observers that count
// instead of trace (observe/), beside serve's tracefs loop (serve_command.cc). Each reads its source
// once per --interval under the scrape lock and adds what grew to its series; a scrape renders them
// (report/openmetrics_reporter.h). In: what serve parsed, the shared scrape state. Out: exit status.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "analysis/exit_metrics.h"
#include "analysis/vm_grouper.h"
#include "observe/bpf_exit_reader.h"
#include "report/openmetrics_reporter.h"
#include "sinks/metrics_http_server.h"

namespace exitscope {

// What a scrape reads. The HTTP thread renders under `mu`; a collection loop holds it while it adds.
struct Served {
  std::mutex mu;
  uint64_t scrapes = 0;
  ExpositionOptions expo;
  // The body of one scrape for these options (under `mu`).
  std::function<std::string(const ExpositionOptions&, const ExporterSelf&)> body;

  Exposition Render(std::string_view accept);
};

struct ServeLoopOptions {
  std::string listen;
  double interval_s = 1;
  uint64_t grace_ns = 0;
  int pid = 0;  // 0: every VM
};

uint64_t SteadyNowNs();  // the clock of the grace period
// The namer every serve mode shares: which VM (and vCPU) a host thread belongs to, from /proc.
VmNameFn NamerOf(ProcVmDirectory& vms);

int RunServeBpfLoop(std::unique_ptr<BpfExitReader> reader, const ServeLoopOptions& o, Served& served);
int RunServeStatsLoop(const ServeLoopOptions& o, Served& served);

}  // namespace exitscope
