#include "report/advice_reporter.h"

#include "report/json_context.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace exitscope {
namespace {

std::string TimeShare(uint64_t ns, const Advice& a) {
  return a.exit_time_ns ? FormatPercent(double(ns) / a.exit_time_ns) : "untimed";
}

std::string SavingText(const Finding& f) {
  if (f.pricing.source == PriceSource::kNone) return "saving not priced";
  std::string from = f.pricing.source == PriceSource::kBench ? ", priced from the bench" : "";
  if (f.saving_share == 0 && f.pricing.saving_ns) {
    return fmt::format("saving ≈ {}{}", FormatDuration(f.pricing.saving_ns), from);
  }
  return fmt::format("saving ≈ {} ({} of exit time){}", FormatDuration(f.pricing.saving_ns),
                     FormatPercent(f.saving_share), from);
}

void RenderFinding(const Finding& f, int n, const Advice& a, std::string* out) {
  std::string time = a.exit_time_ns ? fmt::format(", {} of exit time", TimeShare(f.time_ns, a)) : "";
  *out += fmt::format("\n{}. [{}] {} — {} of exits{}; {}, confidence {}\n", n, f.id, f.title,
                      FormatPercent(f.count_share), time, SavingText(f), ConfidenceName(f.pricing.confidence));
  for (const auto& e : f.evidence) *out += fmt::format("   {}: {}\n", e.name, e.value);
  *out += fmt::format("   the fix removes: {}\n", RemovesName(f.removes));
  *out += fmt::format("   saving: {}{}\n", f.pricing.source == PriceSource::kNone ? "not priced: " : "", f.pricing.how);
  for (const auto& r : f.rips) {
    std::string hex = fmt::format("{:#x}", r.rip);
    *out += fmt::format("   rip {}{} [{}] ×{}{}\n", hex, r.symbol == hex ? "" : " " + r.symbol, r.space, r.exits,
                        r.timed_exits ? fmt::format(" ({})", FormatDuration(r.time_ns)) : "");
  }
  *out += fmt::format("   fix: {}\n", f.fix);
}

}  // namespace

std::string RenderAdviceText(const Advice& a, const std::string& source) {
  std::string out = fmt::format("exitscope advise: {}\n", source);
  if (a.timed_exits == a.exits) {
    out += fmt::format("{} exits, {} of exit time over {}\n", a.exits, FormatDuration(a.exit_time_ns),
                       FormatDuration(a.span_ns));
  } else {
    std::string time =
        a.timed_exits ? fmt::format("{} of exit time", FormatDuration(a.exit_time_ns)) : "exit time unknown";
    out += fmt::format("{} exits ({} timed, {} untimed: entry lost or not recorded), {} over {}\n", a.exits,
                       a.timed_exits, a.exits - a.timed_exits, time, FormatDuration(a.span_ns));
  }
  if (a.blocked_ns) {
    out += fmt::format("blocked in {} (not exit time): {}\n", HaltName(a.isa), FormatDuration(a.blocked_ns));
  }
  if (a.partial) {
    std::string names;
    for (const auto& c : a.partial_counters) names += (names.empty() ? "" : ", ") + c;
    out +=
        fmt::format("PARTIAL: the trace lost data ({}): counts are lower bounds, confidence lowered a step\n", names);
  }
  if (!a.bench.empty()) out += fmt::format("bench round trips: {}\n", a.bench);
  if (a.exits && !a.timed_exits && a.bench.empty()) {
    out +=
        "hint: savings are priced from exit times: record kvm_entry too (-e kvm), or pass --bench FILE "
        "(`exitscope bench --json` on this host)\n";
  }
  if (!a.bench_warning.empty()) out += fmt::format("warning: {}\n", a.bench_warning);
  if (a.vmm_known) {
    out += fmt::format("exits out to the VMM: {} ({} of exit time, {} of exits){}\n", a.vmm_exits,
                       FormatPercent(a.exit_time_ns ? double(a.vmm_time_ns) / a.exit_time_ns : 0),
                       FormatPercent(a.exits ? double(a.vmm_exits) / a.exits : 0),
                       a.vmm_inferred ? " — no kvm_userspace_exit in a trace with KVM's detail events (-e kvm)" : "");
  } else {
    out += "exits out to the VMM: unknown (no kvm_userspace_exit events; record -e kvm)\n";
  }
  out += "exits by kind:";
  for (size_t i = 0; i < a.classes.size(); ++i) {
    const auto& c = a.classes[i];
    out += fmt::format("{} {} {} of exits", i ? ";" : "", ExitClassName(c.exit_class, a.isa),
                       FormatPercent(a.exits ? double(c.exits) / a.exits : 0));
    if (a.exit_time_ns) out += fmt::format(" / {} of time", TimeShare(c.time_ns, a));
  }
  out += "\n" + a.symbols + "\n";
  if (a.findings.empty()) out += "\nNo known exit-cost pattern found.\n";
  int n = 0;
  bool minor_said = false;
  for (const Finding& f : a.findings) {
    if (f.minor && !minor_said) {
      std::string floor = FormatPercent(kMinRankedSavingShare);
      out += n ? fmt::format("\nMinor findings (each saves under {} of exit time):\n", floor)
               : fmt::format("\nNo finding saves {} of exit time; minor findings:\n", floor);
      minor_said = true;
    }
    RenderFinding(f, ++n, a, &out);
  }
  if (!a.not_flagged.empty()) {
    out += "\nchecked, not flagged:\n";
    for (const auto& nf : a.not_flagged) out += fmt::format("  {}: {}\n", nf.id, nf.reason);
  }
  return out;
}

namespace {

// One finding, ranked, with its pricing, evidence and guest RIPs.
nlohmann::ordered_json FindingJson(const Advice& a, const Finding& f, int rank) {
  bool priced = f.pricing.source != PriceSource::kNone;
  nlohmann::ordered_json null;
  nlohmann::ordered_json fj = {
      {"id", f.id},
      {"rank", rank},
      {"title", f.title},
      {"exits", f.exits},
      {"timed_exits", f.timed_exits},
      {"time_ns", f.timed_exits ? nlohmann::ordered_json(f.time_ns) : null},
      {"share", a.exit_time_ns ? nlohmann::ordered_json(f.share) : null},
      {"count_share", f.count_share},
      {"removes", RemovesId(f.removes)},
      {"saving_ns", priced ? nlohmann::ordered_json(f.pricing.saving_ns) : null},
      {"saving_share", priced && a.exit_time_ns ? nlohmann::ordered_json(f.saving_share) : null},
      {"priced_from", !priced                                   ? null
                      : f.pricing.source == PriceSource::kBench ? "bench"
                                                                : "trace"},
      {"saving_how", f.pricing.how},
      {"minor", f.minor},
      {"confidence", ConfidenceName(f.pricing.confidence)},
      {"fix", f.fix}};
  fj["evidence"] = nlohmann::ordered_json::object();
  for (const auto& e : f.evidence) fj["evidence"][e.name] = e.value;
  fj["rips"] = nlohmann::ordered_json::array();
  for (const auto& r : f.rips) {
    fj["rips"].push_back({{"rip", fmt::format("{:#x}", r.rip)},
                          {"symbol", r.symbol},
                          {"space", r.space},
                          {"exits", r.exits},
                          {"time_ns", r.timed_exits ? nlohmann::ordered_json(r.time_ns) : null}});
  }
  return fj;
}

}  // namespace

std::string RenderAdviceJson(const Advice& a, const ReportContext& context,
                             const std::vector<DiagnosticCounter>& diagnostics) {
  nlohmann::ordered_json j;
  TagOutput(&j, "advise", kAdviseJsonSchemaVersion);
  j["kind"] = "exitscope.advise";
  j["source"] = context.source;
  j["context"] = ContextJson(context);
  j["exits"] = a.exits;
  j["timed_exits"] = a.timed_exits;
  // Unknown, not zero, when no exit was timed (kvm_entry not recorded).
  j["exit_time_ns"] = a.timed_exits ? nlohmann::ordered_json(a.exit_time_ns) : nlohmann::ordered_json(nullptr);
  j["blocked_ns"] = a.blocked_ns;
  j["span_ns"] = a.span_ns;
  j["partial"] = a.partial;
  j["partial_counters"] = a.partial_counters;
  j["bench"] = a.bench.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(a.bench);
  if (!a.bench_warning.empty()) j["bench_warning"] = a.bench_warning;
  if (a.vmm_known) {
    j["vmm"] = {{"exits", a.vmm_exits},
                {"time_ns", a.timed_exits ? nlohmann::ordered_json(a.vmm_time_ns) : nlohmann::ordered_json(nullptr)},
                {"inferred", a.vmm_inferred}};
  } else {
    j["vmm"] = nullptr;
  }
  j["symbols"] = a.symbols;
  j["exit_classes"] = nlohmann::ordered_json::array();
  for (const auto& c : a.classes) {
    j["exit_classes"].push_back({{"class", ExitClassName(c.exit_class, a.isa)},
                                 {"exits", c.exits},
                                 {"time_ns", a.timed_exits ? nlohmann::ordered_json(c.time_ns) : nullptr}});
  }
  j["findings"] = nlohmann::ordered_json::array();
  int rank = 0;
  for (const Finding& f : a.findings) j["findings"].push_back(FindingJson(a, f, ++rank));
  j["not_flagged"] = nlohmann::ordered_json::array();
  for (const auto& nf : a.not_flagged) j["not_flagged"].push_back({{"id", nf.id}, {"reason", nf.reason}});
  j["diagnostics"] = DiagnosticsJson(diagnostics);
  return j.dump(2) + "\n";
}

}  // namespace exitscope
