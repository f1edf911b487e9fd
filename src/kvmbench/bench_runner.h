// Runs the selected `exitscope bench` tests, growing the iteration count until the guest has spent a
// time goal in the loop (as kvm-unit-tests' vmexit does), or running a fixed count.
// In: test names and options. Out: one BenchResult per test, skipped ones with the reason.
// Assumption: the guest TSC is constant-rate; KVM_GET_TSC_KHZ converts its cycles to nanoseconds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kvmbench/bench_tests.h"
#include "base/result.h"

namespace exitscope::kvmbench {

struct BenchOptions {
  std::string device = "/dev/kvm";
  std::vector<std::string> tests;  // empty: all
  uint64_t fixed_iterations = 0;   // > 0: run exactly this many once, no growth
  uint64_t min_time_ms = 100;      // growth goal in guest time
  uint64_t max_iterations = 1ull << 24;
};

struct BenchResult {
  std::string name;
  std::string description;
  std::string intended_exit;
  std::string skip_reason;  // non-empty: skipped
  uint64_t exit_rip = 0;    // guest RIP of the exiting instruction
  uint64_t iterations = 0;
  uint64_t cycles = 0;
  double cycles_per_iter = 0;
  double ns_per_iter = 0;
  uint64_t exits = 0;  // KVM's per-vCPU "exits" stat delta (without our sync exit)
  bool exits_known = false;
  uint64_t userspace_exits = 0;
  uint64_t ioeventfd_signals = 0;
  uint64_t runs = 0;  // guest calls made while growing iterations (the last one is reported)
  std::map<std::string, uint64_t> kvm_stats;
};

struct BenchReport {
  std::string device;
  std::string vendor_id;
  std::string kernel_release;
  uint64_t tsc_khz = 0;
  uint64_t fixed_iterations = 0;
  uint64_t min_time_ms = 0;
  std::string kvm_module;       // kvm_intel, kvm_amd, kvm_pvm or ""
  bool emulated_guest = false;  // KvmHost::EmulatesGuest(): no hardware exits on this host
  std::vector<BenchResult> results;
};

Result<BenchReport> RunBench(const BenchOptions& options);

}  // namespace exitscope::kvmbench
