#include <CLI/CLI.hpp>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>

#include "cli/command.h"

#include <algorithm>
#include <thread>

namespace exitscope {

std::span<const Command> Commands() {
  static constexpr Command kCommands[] = {
      {"report", "per-exit-reason statistics of a trace (time, percentiles, per VM / vCPU)", RunReportCommand},
      {"dump", "every event with all its fields, in time order", RunDumpCommand},
      {"record", "record VM exits on this host into a trace.dat (own tracefs instance)", RunRecordCommand},
      {"top", "live exits/s per VM, vCPU and reason on this host", RunTopCommand},
      {"serve", "Prometheus/OpenMetrics exporter of this host's VM exits (GET /metrics)", RunServeCommand},
      {"bench", "measure what each VM exit type costs on this host (needs /dev/kvm)", RunBenchCommand},
      {"advise", "known exit-cost patterns in a trace, each with the saving of its fix", RunAdviseCommand},
      {"cleanup", "remove tracefs instances left by killed exitscope runs", RunCleanupCommand},
      {"timeline", "the exits as Chrome trace-event JSON for the Perfetto UI / chrome://tracing", RunTimelineCommand},
      {"diff", "what changed between two traces, per exit reason and detail key, beyond noise", RunDiffCommand},
  };
  return kCommands;
}

void PrintProgress(uint64_t done, uint64_t total) {
  if (total == 0) return;
  const double pct = 100.0 * static_cast<double>(std::min(done, total)) / static_cast<double>(total);
  std::fprintf(stderr, "\rreading %5.1f%%", pct);
  std::fflush(stderr);
}

void ClearProgress() { std::fprintf(stderr, "\r%20s\r", ""); }

unsigned DecodeThreads(unsigned requested) {
  if (requested) return requested;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
}

// A TSC runs between ~1 MHz and ~100 GHz: outside that, the number is a typo (Hz or MHz given).
constexpr double kMinTscKhz = 1e3, kMaxTscKhz = 1e8;

void AddClockOptions(CLI::App& app, ClockOptions* clock) {
  app.add_option("--tsc-khz", clock->tsc_khz,
                 "TSC rate of the recording host in kHz (2400000 = 2.4 GHz), for a trace recorded with "
                 "`trace-cmd record -C x86-tsc`: its times are TSC cycles until converted. The host's kernel "
                 "logs it: `dmesg | grep -i 'tsc.*MHz'` (\"Refined TSC clocksource calibration: 2399.998 MHz\" "
                 "-> 2399998)")
      ->check(CLI::Range(kMinTscKhz, kMaxTscKhz));
}

Status RequireNsClock(const TraceMeta& meta, std::string_view what) {
  if (meta.time_unit == TimeUnit::kNs) return Status::Ok();
  return MakeError(kExitUsage, "clock.not-ns",
                   std::string(what) + " needs times in ns, but this trace's (clock " +
                       (meta.clock.empty() ? "?" : meta.clock) + ") are " + std::string(TimeUnitName(meta.time_unit)),
                   meta.time_unit == TimeUnit::kCount
                       ? "the counter clock holds no time: record with the default clock (local)"
                       : "pass --tsc-khz N (the recording host's TSC rate in kHz) to convert TSC cycles");
}

namespace {
int stdout_errno = 0;  // the first failed write's errno (stdio's error flag does not keep it)
}  // namespace

bool WriteStdout(std::string_view bytes) {
  if (stdout_errno) return false;
  if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) == bytes.size()) return true;
  stdout_errno = errno ? errno : EIO;
  return false;
}

bool FlushStdout() {
  if (stdout_errno) return false;
  errno = 0;
  if (std::fflush(stdout) == 0) return true;
  stdout_errno = errno ? errno : EIO;
  return false;
}

int FinishStdout(int code, bool quiet_epipe) {
  FlushStdout();
  if (!stdout_errno && std::ferror(stdout)) stdout_errno = EIO;  // a write that bypassed WriteStdout
  if (!stdout_errno) return code;
  if (stdout_errno == EPIPE && quiet_epipe) return 128 + SIGPIPE;
  return PrintError(
      MakeError(kExitIoErr, "output.write", std::string("cannot write the output: ") + std::strerror(stdout_errno),
                stdout_errno == EPIPE ? "the program reading exitscope's output exited before the end"
                                      : "free space where stdout goes, or redirect it elsewhere (`> report.txt`)"));
}

int PrintError(const Error& error) {
  std::fprintf(stderr, "error: %s [%s]\n", error.message.c_str(), error.tag.c_str());
  if (!error.hint.empty()) std::fprintf(stderr, "hint: %s\n", error.hint.c_str());
  return error.code;
}

}  // namespace exitscope
