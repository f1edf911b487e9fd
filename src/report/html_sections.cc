#include "report/html_sections.h"

#include <fmt/format.h>

#include "report/advice_reporter.h"
#include "base/units.h"
#include "decode/exit_reasons.h"
#include "report/diff_reporter.h"
#include "report/json_reporter.h"

namespace exitscope {
namespace {

using nlohmann::json;

// The report's own JSON document, with durations spelled: the page shows the numbers `--json` prints.
json ReportJson(const Report& report) {
  json j = json::parse(RenderJsonReport(report));
  AddDurationTexts(&j, report.context.time_unit);
  return j;
}

std::string ReasonName(uint64_t key) { return ExitReasonName(static_cast<Isa>(key >> 32), static_cast<uint32_t>(key)); }

}  // namespace

void AddDurationTexts(json* j, TimeUnit unit) {
  if (j->is_array()) {
    for (auto& e : *j) AddDurationTexts(&e, unit);
    return;
  }
  if (!j->is_object()) return;
  json texts = json::object();
  for (auto& [k, v] : j->items()) {
    if (v.is_number() && k.size() > 3 && k.ends_with("_ns"))
      texts[k + "_text"] = FormatDuration(v.get<double>(), unit);
    else
      AddDurationTexts(&v, unit);
  }
  for (auto& [k, v] : texts.items()) (*j)[k] = v;
}

HtmlSection ContextSection(const Report& report) {
  json r = ReportJson(report);
  json d{{"schema", r["schema"]},           {"context", r["context"]}, {"totals", r["totals"]},
         {"diagnostics", r["diagnostics"]}, {"partial", r["partial"]}, {"group_by", r["group_by"]}};
  return {"context", "context", "Trace and diagnostics", std::move(d),
          report.partial ? "PARTIAL RESULT: the trace lost data (see the diagnostics)" : ""};
}

HtmlSection ReasonsSection(const Report& report) {
  json r = ReportJson(report);
  json d{{"group_by", r["group_by"]},
         {"userspace_recorded", r["totals"]["userspace_recorded"]},
         {"time_unit", r["context"]["time_unit"]},
         {"groups", r["groups"]}};
  return {"reasons", "reasons", "Exits and exit time per reason", std::move(d),
          report.totals.userspace_known
              ? "Handling time (blocked time of halted vCPUs apart); in-kernel vs VMM from kvm_userspace_exit."
              : "Handling time (blocked time of halted vCPUs apart); the in-kernel / VMM split needs "
                "kvm_userspace_exit in the trace."};
}

HtmlSection LatencySection(const ExitBinner& bins, TimeUnit unit) {
  json reasons = json::array();
  std::map<uint32_t, bool> used;
  for (const auto& [key, hist] : bins.reason_histograms()) {
    json per_thread = json::object();
    for (const auto& [tid, t] : bins.threads()) {
      auto c = t.reasons.find(key);
      if (c == t.reasons.end() || c->second.latency.empty()) continue;
      json buckets = json::array();
      for (const auto& [b, n] : c->second.latency) {
        buckets.push_back({b, n});
        used[b] = true;
      }
      per_thread[std::to_string(tid)] = std::move(buckets);
    }
    json r{{"reason", ReasonName(key)},
           {"timed_count", hist.count()},
           {"total_ns", hist.sum()},
           {"p50_ns", hist.Percentile(0.50)},
           {"p99_ns", hist.Percentile(0.99)},
           {"p999_ns", hist.Percentile(0.999)},
           {"max_ns", hist.max()},
           {"threads", std::move(per_thread)}};
    reasons.push_back(std::move(r));
  }
  std::sort(reasons.begin(), reasons.end(),
            [](const json& a, const json& b) { return a["total_ns"].get<uint64_t>() > b["total_ns"].get<uint64_t>(); });
  json buckets = json::object();
  for (const auto& [b, _] : used) {
    buckets[std::to_string(b)] = {ExitBinner::LatencyBucketLow(b), ExitBinner::LatencyBucketHigh(b),
                                  FormatDuration(ExitBinner::LatencyBucketLow(b), unit)};
  }
  json d{{"time_unit", TimeUnitName(unit)}, {"reasons", std::move(reasons)}, {"buckets", std::move(buckets)}};
  AddDurationTexts(&d, unit);
  return {"latency", "latency", "Handling-time distribution per reason", std::move(d),
          "Log time axis, 4 buckets per doubling; p50 / p99 / p99.9 of the report's histogram marked."};
}

HtmlSection RateSection(const ExitBinner& bins) {
  json threads = json::array();
  for (const auto& [tid, t] : bins.threads()) {
    json reasons = json::object();
    for (const auto& [key, c] : t.reasons) {
      std::vector<uint32_t> v(c.bins.begin(), c.bins.begin() + std::min(c.bins.size(), bins.bins_used()));
      while (!v.empty() && v.back() == 0) v.pop_back();
      reasons[ReasonName(key)] = std::move(v);
    }
    threads.push_back({{"tid", tid},
                       {"vm", bins.VmLabel(t)},
                       {"vm_id", bins.VmId(t)},
                       {"vcpu", bins.VcpuLabel(t)},
                       {"reasons", std::move(reasons)}});
  }
  json d{{"bin_ns", bins.bin_ns()},
         {"bins", bins.bins_used()},
         {"bin_ns_text", FormatDuration(bins.bin_ns())},
         {"threads", std::move(threads)}};
  return {"rate", "rate", "Exits/s over the trace per VM and vCPU", std::move(d),
          fmt::format("One row per vCPU thread, one column per {} of the trace (from its first event); colour: "
                      "exits/s, log scale.",
                      FormatDuration(bins.bin_ns()))};
}

HtmlSection FlameSection(const std::vector<FoldedRow>& rows, const std::string& symbols, TimeUnit unit) {
  json r = json::array();
  for (const auto& f : rows) r.push_back({f.vm, f.vcpu, f.reason, f.frame, f.exits, f.handling_ns});
  json d{{"symbols", symbols}, {"time_unit", TimeUnitName(unit)}, {"rows", std::move(r)}};
  return {"flame", "flame", "Guest code per reason (flame graph)", std::move(d),
          "Reason, then the guest function (or RIP) it exited at; width: handling time or exits. " + symbols};
}

HtmlSection DetailsSection(const Report& report) {
  json r = ReportJson(report);
  json d{{"details", r["details"]}, {"details_hidden", report.details_hidden}};
  return {"details", "details", "Detail breakdowns", std::move(d),
          "What each exit was about: MSR, port, MMIO GPA, CR, hypercall, KVM_EXIT_*, APIC register, vector …"};
}

HtmlSection DiffSection(const DiffReport& diff) {
  json d = json::parse(RenderJsonDiff(diff));
  AddDurationTexts(&d, diff.time_unit);
  return {"diff", "diff", "Before → after, per reason and detail key", std::move(d),
          "Top movers first; ● marks a change beyond noise (the tests named in the verdict's note)."};
}

HtmlSection FindingsSection(const Advice& advice, const Report& report) {
  json a = json::parse(RenderAdviceJson(advice, report.context, report.diagnostics));
  AddDurationTexts(&a, TimeUnit::kNs);  // advise needs ns (RequireNsClock)
  return {"findings", "findings", "Findings and the savings of their fixes", std::move(a),
          "From exitscope advise: biggest saving first; minor ones after."};
}

json FilterChoices(const ExitBinner& bins) {
  json threads = json::array();
  std::map<std::string, bool> reasons;
  for (const auto& [tid, t] : bins.threads()) {
    threads.push_back({{"tid", tid}, {"vm", bins.VmLabel(t)}, {"vm_id", bins.VmId(t)}, {"vcpu", bins.VcpuLabel(t)}});
    for (const auto& [key, c] : t.reasons) reasons[ReasonName(key)] = true;
  }
  json r = json::array();
  for (const auto& [name, _] : reasons) r.push_back(name);
  return {{"threads", std::move(threads)}, {"reasons", std::move(r)}};
}

}  // namespace exitscope
