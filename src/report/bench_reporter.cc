#include "base/json_schema.h"
#include "report/bench_reporter.h"

#include <optional>

#include <fmt/format.h>

namespace exitscope::kvmbench {
namespace {

std::string Hex(uint64_t v) { return fmt::format("{:#x}", v); }

// Where the "exits" column comes from, said wherever it is shown (arch/x86/kvm/x86.c counts
// vcpu->stat.exits once per pass through vcpu_enter_guest).
constexpr const char* kExitsSource =
    "KVM's per-vCPU binary stat 'exits' over the reported run (returns to KVM's run loop, not per "
    "iteration); `exitscope record` during the bench counts kvm_exit events per reason instead";
constexpr const char* kEmulatedNote =
    "this KVM has no VMX/SVM (kvm_pvm): it runs the bench guest in its instruction emulator, so "
    "there are no hardware exits or kvm_exit events, and 'exits' counts emulation batches (up to "
    "kvm_pvm's pvm_emul_batch instructions each); cycles are emulator costs";

// Percent change of current over baseline; lower cycles are better, so negative is an improvement.
std::optional<double> ChangePct(const BenchResult& r, const Baseline* baseline) {
  if (!baseline || !r.skip_reason.empty()) return std::nullopt;
  auto it = baseline->find(r.name);
  if (it == baseline->end() || it->second <= 0) return std::nullopt;
  return (r.cycles_per_iter - it->second) * 100.0 / it->second;
}

}  // namespace

void PrintTestList(FILE* out) {
  for (const auto& t : BenchTests()) {
    std::fprintf(out, "%-20s %s\n%-20s   intended exit: %s\n", std::string(t.name).c_str(),
                 std::string(t.description).c_str(), "", std::string(t.intended_exit).c_str());
  }
}

void PrintTable(const BenchReport& report, const Baseline* baseline, FILE* out) {
  std::fprintf(out, "exitscope bench on %s (%s, %s, kernel %s, TSC %.3f MHz)\n", report.device.c_str(),
               report.vendor_id.empty() ? "unknown vendor" : report.vendor_id.c_str(),
               report.kvm_module.empty() ? "kvm" : report.kvm_module.c_str(), report.kernel_release.c_str(),
               static_cast<double>(report.tsc_khz) / 1000.0);
  std::fprintf(out, "%-20s %12s %12s %11s %10s %12s", "test", "cycles/iter", "ns/iter", "iterations", "exits", "rip");
  if (baseline) std::fprintf(out, " %12s %9s", "baseline", "change");
  std::fprintf(out, "\n");
  for (const auto& r : report.results) {
    if (!r.skip_reason.empty()) {
      std::fprintf(out, "%-20s skipped: %s\n", r.name.c_str(), r.skip_reason.c_str());
      continue;
    }
    std::string exits = r.exits_known ? std::to_string(r.exits) : "n/a";
    std::fprintf(out, "%-20s %12.1f %12.1f %11llu %10s %12s", r.name.c_str(), r.cycles_per_iter, r.ns_per_iter,
                 static_cast<unsigned long long>(r.iterations), exits.c_str(), Hex(r.exit_rip).c_str());
    if (baseline) {
      auto it = baseline->find(r.name);
      auto change = ChangePct(r, baseline);
      if (it != baseline->end())
        std::fprintf(out, " %12.1f", it->second);
      else
        std::fprintf(out, " %12s", "-");
      if (change)
        std::fprintf(out, " %+8.1f%%", *change);
      else
        std::fprintf(out, " %9s", "-");
    }
    std::fprintf(out, "\n");
  }
  if (baseline) std::fprintf(out, "change: cycles/iter against the baseline; lower is better\n");
  std::fprintf(out, "exits: %s\n", kExitsSource);
  if (report.emulated_guest) std::fprintf(out, "note: %s\n", kEmulatedNote);
}

nlohmann::json ToJson(const BenchReport& report, const Baseline* baseline) {
  nlohmann::json j;
  TagSchema(&j, "bench", kBenchJsonSchemaVersion);
  j["context"] = {{"device", report.device},
                  {"vendor", report.vendor_id},
                  {"kernel_release", report.kernel_release},
                  {"tsc_khz", report.tsc_khz},
                  {"fixed_iterations", report.fixed_iterations},
                  {"min_time_ms", report.min_time_ms},
                  {"kvm_module", report.kvm_module},
                  {"emulated_guest", report.emulated_guest},
                  {"exits_source", kExitsSource},
                  {"exitscope_version", EXITSCOPE_VERSION}};
  j["tests"] = nlohmann::json::array();
  for (const auto& r : report.results) {
    nlohmann::json t = {{"name", r.name},
                        {"description", r.description},
                        {"intended_exit", r.intended_exit},
                        {"exit_rip", r.exit_rip},
                        {"exit_rip_hex", Hex(r.exit_rip)}};
    if (!r.skip_reason.empty()) {
      t["status"] = "skipped";
      t["skip_reason"] = r.skip_reason;
    } else {
      t["status"] = "ok";
      t["iterations"] = r.iterations;
      t["cycles"] = r.cycles;
      t["cycles_per_iter"] = r.cycles_per_iter;
      t["ns_per_iter"] = r.ns_per_iter;
      t["exits"] = r.exits_known ? nlohmann::json(r.exits) : nlohmann::json(nullptr);
      t["userspace_exits"] = r.userspace_exits;
      t["ioeventfd_signals"] = r.ioeventfd_signals;
      t["runs"] = r.runs;
      t["kvm_stats"] = r.kvm_stats;
      if (auto change = ChangePct(r, baseline)) {
        t["baseline_cycles_per_iter"] = baseline->at(r.name);
        t["change_pct"] = *change;
      }
    }
    j["tests"].push_back(std::move(t));
  }
  return j;
}

}  // namespace exitscope::kvmbench
