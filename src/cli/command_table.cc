#include <cstdio>

#include "cli/command.h"

#include <algorithm>
#include <thread>

namespace exitscope {

std::span<const Command> Commands() {
  static constexpr Command kCommands[] = {
      {"report", "per-exit-reason statistics of a trace (time, percentiles, per VM / vCPU)",
       RunReportCommand},
      {"dump", "every event with all its fields, in time order", RunDumpCommand},
      {"record", "record VM exits on this host into a trace.dat (own tracefs instance)",
       RunRecordCommand},
      {"top", "live exits/s per VM, vCPU and reason on this host", RunTopCommand},
      {"bench", "measure what each VM exit type costs on this host (needs /dev/kvm)", RunBenchCommand},
      {"advise", "known exit-cost patterns in a trace, each with the saving of its fix", RunAdviseCommand},
  };
  return kCommands;
}

unsigned DecodeThreads(unsigned requested) {
  if (requested) return requested;
  return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
}

int PrintError(const Error& error) {
  std::fprintf(stderr, "error: %s [%s]\n", error.message.c_str(), error.tag.c_str());
  if (!error.hint.empty()) std::fprintf(stderr, "hint: %s\n", error.hint.c_str());
  return error.code;
}

}  // namespace exitscope
