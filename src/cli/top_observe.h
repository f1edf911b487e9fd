// `top --mode bpf` and `top --mode stats`: the interval loops of the two observers that do not
// stream events (observe/): the in-kernel counter's map read once per interval, or KVM's debugfs
// counters. In: what top parsed. Out: the exit status; text or JSON lines on stdout.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "observe/bpf_exit_reader.h"

namespace exitscope {

struct TopLoopOptions {
  double delay_s = 1;
  uint64_t count = 0;  // 0: until Ctrl-C
  uint64_t rows = 15;
  bool json = false;
  int pid = 0;
  std::string reason;
};

int RunTopBpfLoop(std::unique_ptr<BpfExitReader> reader, const TopLoopOptions& o);
int RunTopStatsLoop(const TopLoopOptions& o);

}  // namespace exitscope
