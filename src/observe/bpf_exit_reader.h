// The in-kernel exit counter (bpf/kvm_exits.bpf.c) loaded and attached, and its per-CPU map read
// back: `top --mode bpf` and `bench --observe bpf`. In: the tracefs mount (for kvm_exit's field
// offsets) and an optional process to watch. Out: cumulative per-(process, thread, reason, isa)
// sums at each Snapshot. Assumption: the caller may load BPF programs (root or CAP_BPF+CAP_PERFMON);
// when it may not, or the kernel lacks BPF or the kvm tracepoints, Load says why (69).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "observe/bpf_exit_table.h"

namespace exitscope {

struct BpfExitOptions {
  std::string tracefs;  // empty: FindTracefs()
  int pid = 0;          // 0: every process
};

class BpfExitReader {
 public:
  // Whether this build carries the BPF program at all (cmake/bpf.cmake found clang and bpftool).
  static bool Built();
  static Result<std::unique_ptr<BpfExitReader>> Load(const BpfExitOptions& options);
  ~BpfExitReader();
  BpfExitReader(const BpfExitReader&) = delete;
  BpfExitReader& operator=(const BpfExitReader&) = delete;
  // The map summed over CPUs, cumulative since Load.
  Result<std::vector<BpfExitEntry>> Snapshot() const;

 private:
  BpfExitReader() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace exitscope
