// `exitscope bench --observe MODES`: the selected bench tests run with each observer attached in
// turn (none, stats, bpf, tracefs-minimal, tracefs, top, record, perf; top and record are
// exitscope's own commands run as a user runs them, in a child process), repeated, interleaved so that drift hits
// every mode alike; per test and mode the cycles/iter (median and spread over the repeats) and the
// cycles each observer adds per exit against "none". In: bench options, modes, repeats. Out:
// ObservedBench, as a table or JSON (schema exitscope.bench-observe/1).
// Assumption: the observers run in this process beside the guest (as top or record would beside a
// VM); an observer that cannot start is skipped with its reason, not an error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/result.h"
#include "kvmbench/bench_runner.h"

namespace exitscope {

// Every mode name, in the order the table shows them.
const std::vector<std::string>& ObserveModes();
// "none,bpf" -> {"none","bpf"}; 64 naming the valid ones on a bad name.
Result<std::vector<std::string>> ParseObserveModes(const std::string& list);

// An observer attached around one bench run; Stop says how many kvm exits of this process it saw
// (-1: it does not count them).
class BenchObserver {
 public:
  virtual ~BenchObserver() = default;
  virtual Status Start() = 0;
  virtual Result<int64_t> Stop() = 0;
  // CPU seconds (user + system) the observer's own process used from Start to Stop; -1 when it runs
  // inside this process (its cost then shows only in the guest's cycles).
  virtual double CpuSeconds() const { return -1; }
};
Result<std::unique_ptr<BenchObserver>> MakeBenchObserver(const std::string& mode);

struct ObservedMode {
  std::string mode;
  std::string skip_reason;              // non-empty: not run
  std::vector<double> cycles_per_iter;  // one per repeat
  std::vector<int64_t> seen_exits;      // per repeat, what the observer counted (-1 unknown)
  std::vector<double> cpu_s;            // per repeat, the observer process's CPU seconds (-1 unknown)
  double median = 0, min = 0, max = 0;
  double added_cycles_per_exit = 0;  // (median - none's median) / exits per iteration
  bool has_added = false;
};

struct ObservedTest {
  std::string name;
  uint64_t iterations = 0;
  double exits_per_iter = 1;  // KVM's exits stat / iterations of the last none (else first) run
  std::string skip_reason;
  std::vector<ObservedMode> modes;
};

struct ObservedBench {
  std::string vendor_id, kernel_release, kvm_module;
  bool emulated_guest = false;
  uint64_t repeats = 0;
  std::vector<std::string> mode_skips;  // "bpf: reason"
  std::vector<ObservedTest> tests;
};

Result<ObservedBench> RunObservedBench(const kvmbench::BenchOptions& options, const std::vector<std::string>& modes,
                                       uint64_t repeats);
std::string RenderObservedBenchText(const ObservedBench& b);
nlohmann::ordered_json ObservedBenchJson(const ObservedBench& b);

}  // namespace exitscope
