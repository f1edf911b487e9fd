// This host's measured exit round trips, read from `exitscope bench --json` (kvmbench/bench_results,
// schema "exitscope.bench/1"), for `advise --bench FILE`: they price a fix when the trace cannot
// (exits without times), and are shown beside the trace's own price when it can.
// In: the bench JSON. Out: ns per round trip for each test where every iteration exited once (the
// guest-side time of one exit, VM transitions included, which kvm_exit→kvm_entry cannot see).
// Assumption: the bench ran on the host the trace was recorded on; when its vendor says otherwise
// the advisor says the prices come from another machine.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "model/kvm_event.h"
#include "base/result.h"

namespace exitscope {

struct BenchCosts {
  std::string path;
  std::string vendor;  // CPUID vendor string of the bench host
  std::string kernel_release;
  bool emulated = false;  // the bench's KVM had no VMX/SVM: its times are emulator costs
  std::map<std::string, double, std::less<>> round_trip_ns;  // test name → ns per exiting iteration

  std::optional<uint64_t> RoundTripNs(std::string_view test) const;
  // What `with` costs on top of `without` (e.g. an exit answered by the VMM over one KVM answers),
  // when both ran and `with` is the dearer.
  std::optional<uint64_t> ExtraNs(std::string_view with, std::string_view without) const;
  Isa HostIsa() const;           // from the vendor; kUnknown when neither Intel nor AMD/Hygon
  std::string Describe() const;  // "bench.json (AuthenticAMD, kernel 6.1.0-57-amd64)"
};

Result<BenchCosts> LoadBenchCosts(const std::string& path);

}  // namespace exitscope
