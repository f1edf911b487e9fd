#include "advise/advice_reporter.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace exitscope {

std::string RenderAdviceText(const Advice& a, const std::string& source) {
  std::string out = fmt::format("exitscope advise: {}\n", source);
  out += fmt::format("{} exits, {} of exit time over {}\n", a.exits, FormatNs(a.exit_time_ns), FormatNs(a.span_ns));
  if (a.vmm_known) {
    out += fmt::format("exits out to the VMM: {} ({} of exit time, {} of exits)\n", a.vmm_exits,
                       FormatPercent(a.exit_time_ns ? double(a.vmm_time_ns) / a.exit_time_ns : 0),
                       FormatPercent(a.exits ? double(a.vmm_exits) / a.exits : 0));
  } else {
    out += "exits out to the VMM: unknown (no kvm_userspace_exit events; record -e kvm)\n";
  }
  out += "exits by kind:";
  for (size_t i = 0; i < a.classes.size(); ++i) {
    const auto& c = a.classes[i];
    out += fmt::format("{} {} {} of exits / {} of time", i ? ";" : "", ExitClassName(c.exit_class),
                       FormatPercent(a.exits ? double(c.exits) / a.exits : 0),
                       FormatPercent(a.exit_time_ns ? double(c.time_ns) / a.exit_time_ns : 0));
  }
  out += "\n" + a.symbols + "\n";
  if (a.findings.empty()) out += "\nNo known exit-cost pattern found.\n";
  int n = 0;
  for (const Finding& f : a.findings) {
    out += fmt::format("\n{}. [{}] {} — {} of exits, {} of exit time; saving ≈ {} ({} of exit time), "
                       "confidence {}\n", ++n, f.id, f.title, FormatPercent(f.count_share), FormatPercent(f.share),
                       FormatNs(f.pricing.saving_ns), FormatPercent(f.saving_share),
                       ConfidenceName(f.pricing.confidence));
    for (const auto& e : f.evidence) out += fmt::format("   {}: {}\n", e.name, e.value);
    out += fmt::format("   saving: {}\n", f.pricing.how);
    for (const auto& r : f.rips) {
      std::string hex = fmt::format("{:#x}", r.rip);
      out += fmt::format("   rip {}{} [{}] ×{} ({})\n", hex, r.symbol == hex ? "" : " " + r.symbol, r.space, r.exits,
                         FormatNs(r.time_ns));
    }
    out += fmt::format("   fix: {}\n", f.fix);
  }
  if (!a.not_flagged.empty()) {
    out += "\nchecked, not flagged:\n";
    for (const auto& nf : a.not_flagged) out += fmt::format("  {}: {}\n", nf.id, nf.reason);
  }
  return out;
}

std::string RenderAdviceJson(const Advice& a, const std::string& source) {
  nlohmann::ordered_json j;
  j["schema_version"] = kAdviseJsonSchemaVersion;
  j["kind"] = "exitscope.advise";
  j["source"] = source;
  j["exits"] = a.exits;
  j["exit_time_ns"] = a.exit_time_ns;
  j["span_ns"] = a.span_ns;
  if (a.vmm_known) {
    j["vmm"] = {{"exits", a.vmm_exits}, {"time_ns", a.vmm_time_ns}};
  } else {
    j["vmm"] = nullptr;
  }
  j["symbols"] = a.symbols;
  j["exit_classes"] = nlohmann::ordered_json::array();
  for (const auto& c : a.classes) {
    j["exit_classes"].push_back({{"class", ExitClassName(c.exit_class)}, {"exits", c.exits}, {"time_ns", c.time_ns}});
  }
  j["findings"] = nlohmann::ordered_json::array();
  for (const Finding& f : a.findings) {
    nlohmann::ordered_json fj = {{"id", f.id},
                         {"title", f.title},
                         {"exits", f.exits},
                         {"time_ns", f.time_ns},
                         {"share", f.share},
                         {"count_share", f.count_share},
                         {"saving_ns", f.pricing.saving_ns},
                         {"saving_share", f.saving_share},
                         {"saving_how", f.pricing.how},
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
                            {"time_ns", r.time_ns}});
    }
    j["findings"].push_back(std::move(fj));
  }
  j["not_flagged"] = nlohmann::ordered_json::array();
  for (const auto& nf : a.not_flagged) j["not_flagged"].push_back({{"id", nf.id}, {"reason", nf.reason}});
  return j.dump(2) + "\n";
}

}  // namespace exitscope
