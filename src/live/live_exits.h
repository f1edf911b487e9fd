// One live capture of VM exits on this host, for `top` and `serve`: its own tracefs instance with
// the exit events on, pages read from the ring buffer, decoded against the running kernel's formats
// and paired into ExitSamples for a sink, with the kernel's per-CPU losses.
// In: LiveExitOptions, a sink. Out: the sink's calls at each Collect; loss(), diagnostics().
// Assumption: one thread drives it (Poll/Collect); the instance is removed by Stop or the
// destructor on every exit path (a SIGKILLed run's instance is removed by the next run).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "analysis/exit_driver.h"
#include "analysis/exit_pairer.h"
#include "base/result.h"
#include "model/diagnostics.h"
#include "pipeline/live_page_decoder.h"
#include "sources/live/trace_pipe_reader.h"
#include "sources/live/tracefs_instance.h"

namespace exitscope {

struct LiveExitOptions {
  std::string tracefs;              // empty: FindTracefs()
  uint32_t buffer_kb = 4096;        // ring buffer per CPU
  int pid = 0;                      // 0: every process
  std::vector<std::string> events;  // empty: DefaultExitEvents() (bench --observe tracefs-minimal: fewer)
  KvmEventTap* tap = nullptr;       // sees every kvm event before the pairer (top and serve count exits there)
};

class LiveExitSession {
 public:
  // Creates the instance and turns tracing on; exits go to `sink`, loss markers to `on_lost` too.
  static Result<std::unique_ptr<LiveExitSession>> Start(const LiveExitOptions& options, ExitSampleSink* sink,
                                                        std::function<void(const LostEvents&)> on_lost = {});
  ~LiveExitSession();
  // Waits up to wait_ms for ring-buffer pages and keeps what it read.
  Status Poll(int wait_ms);
  // Reads what is left, decodes and pairs everything into the sink, re-reads the per-CPU stats.
  Status Collect();
  const std::vector<CpuLoss>& loss() const { return reader_->loss(); }
  const Diagnostics& diagnostics() const { return diag_; }
  const std::string& instance_dir() const { return instance_->dir(); }
  // Closes the ring-buffer files and removes the instance.
  Status Stop();

 private:
  LiveExitSession() = default;
  Diagnostics diag_;
  std::unique_ptr<TracefsInstance> instance_;
  std::unique_ptr<LivePageDecoder> decoder_;
  std::unique_ptr<ExitPairer> pairer_;
  std::unique_ptr<TracePipeReader> reader_;
  std::function<void(const LostEvents&)> on_lost_;
  KvmEventTap* tap_ = nullptr;
  TracePipeReader::Sink page_sink_;
};

}  // namespace exitscope
