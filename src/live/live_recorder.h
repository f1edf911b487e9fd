// `exitscope record`: kvm events from our own tracefs instance into a trace.dat v7 (zstd).
// In: RecordOptions. Out: a complete trace.dat (also after SIGINT/SIGTERM) and a summary with the
// per-CPU losses the kernel reported. The host's tracing state is left as found: the instance is
// removed on every exit path, and instances of earlier killed runs are removed at start.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sources/live/trace_pipe_reader.h"
#include "base/result.h"
#include "sinks/tracedat_writer.h"

namespace exitscope {

struct RecordOptions {
  std::string output;
  int pid = 0;                      // 0: every process
  double duration_s = 0;            // 0: until a stop signal
  std::vector<std::string> events;  // empty: DefaultExitEvents()
  uint32_t buffer_size_kb = 8192;   // per CPU, as trace-cmd's -b
  bool kallsyms = false;            // embed /proc/kallsyms (MBs; trace-cmd does by default)
  std::string tracefs;              // empty: FindTracefs()
  // Called once tracing is on (tests and the CLI use it to say "recording…").
  std::function<void(const std::string& instance_dir)> on_started;
};

struct RecordSummary {
  std::string instance_dir;
  std::vector<std::string> events;  // "sys:name" enabled
  uint64_t pages = 0, bytes = 0;    // ring-buffer pages written, uncompressed
  uint64_t events_read = 0;         // the kernel's "read events" over all CPUs
  uint64_t file_bytes = 0;
  double wall_s = 0, cpu_user_s = 0, cpu_sys_s = 0;
  std::vector<CpuLoss> loss;  // per CPU
  int stop_signal = 0;
  uint64_t TotalLost() const;
};

Result<RecordSummary> RunRecord(const RecordOptions& options);

// Metadata for a trace.dat from a live instance (header_page/event, formats, uname, clock …).
Result<TraceDatMeta> CollectTraceDatMeta(const TracefsInstance& instance, bool kallsyms);
// The kernel's saved_cmdlines plus the names of `pid`'s threads ("pid comm" lines).
std::string CollectCmdlines(const TracefsInstance& instance, int pid);

}  // namespace exitscope
