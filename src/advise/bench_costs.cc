#include "advise/bench_costs.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include <nlohmann/json.hpp>

#include "base/json_schema.h"
#include "kvmbench/bench_results.h"

namespace exitscope {
namespace {

// A test whose exits fall short of its iterations did not exit on every iteration (mov_to_dr7 with
// lazy DR switching, mov_from_cr8): its ns/iter is not the price of one exit. The few extra exits a
// run has (interrupts, the first entry) are allowed for.
constexpr double kMinExitsPerIteration = 0.9;

}  // namespace

std::optional<uint64_t> BenchCosts::RoundTripNs(std::string_view test) const {
  auto it = round_trip_ns.find(test);
  if (it == round_trip_ns.end()) return std::nullopt;
  return static_cast<uint64_t>(it->second + 0.5);
}

std::optional<uint64_t> BenchCosts::ExtraNs(std::string_view with, std::string_view without) const {
  auto a = RoundTripNs(with), b = RoundTripNs(without);
  if (!a || !b || *a <= *b) return std::nullopt;
  return *a - *b;
}

Isa BenchCosts::HostIsa() const {
  if (vendor == "GenuineIntel") return Isa::kVmx;
  if (vendor == "AuthenticAMD" || vendor == "HygonGenuine") return Isa::kSvm;
  return Isa::kUnknown;
}

std::string BenchCosts::Describe() const {
  return fmt::format("{} ({}, kernel {}{})", path, vendor.empty() ? "unknown vendor" : vendor,
                     kernel_release.empty() ? "?" : kernel_release, emulated ? ", emulated guest" : "");
}

Result<BenchCosts> LoadBenchCosts(const std::string& path) {
  auto read = kvmbench::ReadBenchJson(path, "advise.bench", "bench results", "bench.json");
  if (!read) return read.error();
  const nlohmann::json& j = read.value();
  BenchCosts b;
  b.path = path;
  if (j.contains("context") && j["context"].is_object()) {
    const auto& c = j["context"];
    b.vendor = c.value("vendor", "");
    b.kernel_release = c.value("kernel_release", "");
    b.emulated = c.value("emulated_guest", false);
  }
  for (const auto& t : j["tests"]) {
    if (!t.is_object() || t.value("status", "") != "ok") continue;
    if (!t.contains("ns_per_iter") || !t["ns_per_iter"].is_number()) continue;
    if (!t.contains("exits") || !t["exits"].is_number() || !t.contains("iterations") || !t["iterations"].is_number()) {
      continue;
    }
    double iters = t["iterations"].get<double>();
    if (iters <= 0 || t["exits"].get<double>() < kMinExitsPerIteration * iters) continue;
    b.round_trip_ns[t.value("name", "")] = t["ns_per_iter"].get<double>();
  }
  if (b.round_trip_ns.empty()) {
    return MakeError(kExitDataErr, "advise.bench-empty",
                     fmt::format("{} has no test that exited on every iteration", path),
                     "run `exitscope bench --json` on a KVM host (not in an emulated guest)");
  }
  return b;
}

}  // namespace exitscope
