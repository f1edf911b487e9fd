#include "report/openmetrics_reporter.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <set>

namespace exitscope {
namespace {

// Label values: backslash, double quote and line feed are escaped (both formats' rule).
std::string Escape(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '"')
      out += "\\\"";
    else if (c == '\n')
      out += "\\n";
    else
      out += c;
  }
  return out;
}

std::string Seconds(uint64_t ns) { return fmt::format("{}", ns / 1e9); }

class Writer {
 public:
  explicit Writer(ExpositionFormat f) : om_(f == ExpositionFormat::kOpenMetrics) {}
  // One family's header. `name` is the family name without _total / _info (OpenMetrics' rule); the
  // text format names a counter family by its sample name and knows no info or unit.
  void Family(std::string_view name, std::string_view type, std::string_view unit, std::string_view help) {
    std::string shown(name);
    std::string_view shown_type = type;
    if (!om_) {
      if (type == "counter") shown += "_total";
      if (type == "info") {
        shown += "_info";
        shown_type = "gauge";
      }
    }
    out_ += fmt::format("# HELP {} {}\n# TYPE {} {}\n", shown, help, shown, shown_type);
    if (om_ && !unit.empty()) out_ += fmt::format("# UNIT {} {}\n", shown, unit);
  }
  void Sample(std::string_view name, std::string_view labels, std::string_view value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    out_ += value;
    out_ += '\n';
  }
  std::string Finish() {
    if (om_) out_ += "# EOF\n";
    return std::move(out_);
  }

 private:
  bool om_;
  std::string out_;
};

std::string L(std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
  std::string s;
  for (const auto& [k, v] : kv) s += fmt::format("{}{}=\"{}\"", s.empty() ? "" : ",", k, Escape(v));
  return s;
}

std::string VcpuLabel(int32_t v) { return v < 0 ? "unknown" : std::to_string(v); }

// Per VM: its info, exits and exit time by reason, exits by vCPU.
void WriteVmFamilies(Writer& w, const ExitMetrics& metrics) {
  const auto& domains = metrics.domains();
  w.Family("exitscope_vm", "info", "", "a VM seen exiting: its name (domain), uuid, VMM and vCPUs seen");
  for (const auto& [name, d] : domains) {
    size_t vcpus = 0;
    for (const auto& [v, n] : d.vcpu_exits) vcpus += v >= 0;
    w.Sample("exitscope_vm_info",
             L({{"domain", name}, {"uuid", d.uuid}, {"vmm", d.vmm}, {"vcpus", std::to_string(vcpus)}}), "1");
  }

  w.Family("exitscope_exits", "counter", "", "VM exits by VM and exit reason (timed or not)");
  for (const auto& [name, d] : domains)
    for (const auto& [reason, r] : d.reasons)
      w.Sample("exitscope_exits_total", L({{"domain", name}, {"reason", reason}}), std::to_string(r.exits));

  w.Family("exitscope_exit_seconds", "counter", "seconds",
           "handling time of exits, kvm_exit to kvm_entry, a halted vCPU's wait excluded; stage=vmm: "
           "exits that went to the VMM (kvm_userspace_exit), stage=kernel: the others");
  for (const auto& [name, d] : domains)
    for (const auto& [reason, r] : d.reasons) {
      w.Sample("exitscope_exit_seconds_total", L({{"domain", name}, {"reason", reason}, {"stage", "kernel"}}),
               Seconds(r.kernel_ns));
      w.Sample("exitscope_exit_seconds_total", L({{"domain", name}, {"reason", reason}, {"stage", "vmm"}}),
               Seconds(r.vmm_ns));
    }

  w.Family("exitscope_vcpu_exits", "counter", "", "VM exits by VM and vCPU index");
  for (const auto& [name, d] : domains)
    for (const auto& [vcpu, n] : d.vcpu_exits)
      w.Sample("exitscope_vcpu_exits_total", L({{"domain", name}, {"vcpu", VcpuLabel(vcpu)}}), std::to_string(n));
}

// The `top` reasons with the most exits over all VMs, most first (ties by name): which reasons get a
// histogram. Domains: any map of domain name to a struct whose `reasons` map holds `exits`.
template <typename Domains>
std::vector<std::pair<uint64_t, std::string>> TopReasons(const Domains& domains, size_t top) {
  std::map<std::string, uint64_t> by_reason;
  for (const auto& [name, d] : domains)
    for (const auto& [reason, r] : d.reasons) by_reason[reason] += r.exits;
  std::vector<std::pair<uint64_t, std::string>> order;
  for (const auto& [reason, n] : by_reason) order.emplace_back(n, reason);
  std::sort(order.begin(), order.end(),
            [](const auto& a, const auto& b) { return a.first != b.first ? a.first > b.first : a.second < b.second; });
  if (order.size() > top) order.resize(top);
  return order;
}

// The handling-time histogram of the `top` reasons with most exits over all VMs.
void WriteHistograms(Writer& w, const ExitMetrics& metrics, size_t top) {
  const auto& domains = metrics.domains();
  const auto order = TopReasons(domains, top);
  w.Family("exitscope_exit_duration_seconds", "histogram", "seconds",
           "handling time of timed exits of the reasons with the most exits");
  for (const auto& [name, d] : domains)
    for (const auto& [n, reason] : order) {
      auto it = d.reasons.find(reason);
      if (it == d.reasons.end()) continue;
      const ReasonMetrics& r = it->second;
      uint64_t cumulative = 0;
      for (size_t i = 0; i < kExitDurationBuckets.size(); ++i) {
        cumulative += r.buckets[i];
        w.Sample("exitscope_exit_duration_seconds_bucket",
                 L({{"domain", name}, {"reason", reason}, {"le", fmt::format("{}", kExitDurationBuckets[i])}}),
                 std::to_string(cumulative));
      }
      w.Sample("exitscope_exit_duration_seconds_bucket", L({{"domain", name}, {"reason", reason}, {"le", "+Inf"}}),
               std::to_string(r.timed));
      w.Sample("exitscope_exit_duration_seconds_sum", L({{"domain", name}, {"reason", reason}}), Seconds(r.timed_ns));
      w.Sample("exitscope_exit_duration_seconds_count", L({{"domain", name}, {"reason", reason}}),
               std::to_string(r.timed));
    }
}

// The exporter's own cost: CPU, memory, scrapes, and this scrape's render time (from t0).
void WriteSelf(Writer& w, const ExporterSelf& self, std::chrono::steady_clock::time_point t0) {
  w.Family("exitscope_exporter_cpu_seconds", "counter", "seconds", "CPU time the exporter used (user + system)");
  w.Sample("exitscope_exporter_cpu_seconds_total", "", fmt::format("{}", self.cpu_seconds));
  w.Family("exitscope_exporter_resident_memory_bytes", "gauge", "bytes", "the exporter's resident memory");
  w.Sample("exitscope_exporter_resident_memory_bytes", "", std::to_string(self.resident_bytes));
  w.Family("exitscope_scrapes", "counter", "", "scrapes answered, this one included");
  w.Sample("exitscope_scrapes_total", "", std::to_string(self.scrapes));
  w.Family("exitscope_scrape_duration_seconds", "gauge", "seconds", "time to render this scrape");
  w.Sample("exitscope_scrape_duration_seconds", "",
           fmt::format("{}", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
}

// build_info, and which observer produced the series (serve --mode), so that dashboards can tell
// them apart; offline (no mode) only the former.
void WriteHeader(Writer& w, std::string_view mode) {
  w.Family("exitscope_build", "info", "", "exitscope's version");
  w.Sample("exitscope_build_info", L({{"version", EXITSCOPE_VERSION}}), "1");
  if (mode.empty()) return;
  w.Family("exitscope_observer", "info", "", "how serve observes exits (serve --mode)");
  w.Sample("exitscope_observer_info", L({{"mode", mode}}), "1");
}

}  // namespace

std::string RenderExposition(const ExitMetrics& metrics, const std::vector<DiagnosticCounter>& diagnostics,
                             const ExporterSelf* self, const ExpositionOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  Writer w(options.format);
  WriteHeader(w, options.observer_mode);
  WriteVmFamilies(w, metrics);
  if (options.histogram_reasons > 0) WriteHistograms(w, metrics, options.histogram_reasons);

  w.Family("exitscope_events_lost", "counter", "", "trace events the kernel lost, by CPU");
  for (const auto& [cpu, n] : metrics.lost_by_cpu())
    w.Sample("exitscope_events_lost_total", L({{"cpu", std::to_string(cpu)}}), std::to_string(n));

  w.Family("exitscope_diagnostics", "counter", "",
           "named anomaly counters of the trace's decoding and pairing (model/diagnostic_ids.h)");
  for (const auto& c : diagnostics)
    w.Sample("exitscope_diagnostics_total", L({{"counter", c.name}, {"severity", SeverityName(c.severity)}}),
             std::to_string(c.count));
  if (self) WriteSelf(w, *self, t0);
  return w.Finish();
}

namespace {

void WriteLog2Histograms(Writer& w, const Log2ExitMetrics& metrics, size_t top) {
  const auto order = TopReasons(metrics.domains, top);
  w.Family("exitscope_exit_duration_seconds", "histogram", "seconds",
           "kvm_exit to kvm_entry of timed exits of the reasons with the most exits, in the kernel's log2 "
           "buckets: le = 2^k - 1 ns, exact for integer nanoseconds");
  const std::vector<uint64_t> bounds = Log2HistogramBoundsNs();
  for (const auto& [name, d] : metrics.domains)
    for (const auto& [n, reason] : order) {
      auto it = d.reasons.find(reason);
      if (it == d.reasons.end()) continue;
      const Log2ReasonMetrics& r = it->second;
      // Bucket b holds [2^b, 2^(b+1)) ns: the count up to le = 2^k - 1 ns is buckets 0..k-1.
      uint64_t cumulative = 0;
      size_t b = 0;
      for (uint64_t bound : bounds) {
        for (; b < kLog2Buckets && (uint64_t{1} << (b + 1)) - 1 <= bound; ++b) cumulative += r.buckets[b];
        w.Sample("exitscope_exit_duration_seconds_bucket",
                 L({{"domain", name}, {"reason", reason}, {"le", Seconds(bound)}}), std::to_string(cumulative));
      }
      w.Sample("exitscope_exit_duration_seconds_bucket", L({{"domain", name}, {"reason", reason}, {"le", "+Inf"}}),
               std::to_string(r.timed));
      w.Sample("exitscope_exit_duration_seconds_sum", L({{"domain", name}, {"reason", reason}}), Seconds(r.timed_ns));
      w.Sample("exitscope_exit_duration_seconds_count", L({{"domain", name}, {"reason", reason}}),
               std::to_string(r.timed));
    }
}

void WriteLog2Families(Writer& w, const Log2ExitMetrics& metrics) {
  w.Family("exitscope_vm", "info", "", "a VM seen exiting: its name (domain), uuid, VMM and vCPUs seen");
  for (const auto& [name, d] : metrics.domains) {
    size_t vcpus = 0;
    for (const auto& [v, n] : d.vcpu_exits) vcpus += v >= 0;
    w.Sample("exitscope_vm_info",
             L({{"domain", name}, {"uuid", d.uuid}, {"vmm", d.vmm}, {"vcpus", std::to_string(vcpus)}}), "1");
  }
  w.Family("exitscope_exits", "counter", "", "VM exits by VM and exit reason, counted in the kernel (every kvm_exit)");
  for (const auto& [name, d] : metrics.domains)
    for (const auto& [reason, r] : d.reasons)
      w.Sample("exitscope_exits_total", L({{"domain", name}, {"reason", reason}}), std::to_string(r.exits));
  w.Family("exitscope_exit_seconds", "counter", "seconds",
           "kvm_exit to kvm_entry of the exits followed by an entry, summed in the kernel; no stage label: "
           "kernel and VMM time are not told apart, and a halted vCPU's wait is included");
  for (const auto& [name, d] : metrics.domains)
    for (const auto& [reason, r] : d.reasons)
      w.Sample("exitscope_exit_seconds_total", L({{"domain", name}, {"reason", reason}}), Seconds(r.timed_ns));
  w.Family("exitscope_vmm_trips", "counter", "",
           "kvm_userspace_exit while an exit was handled: trips to the VMM, by VM and exit reason");
  for (const auto& [name, d] : metrics.domains)
    for (const auto& [reason, r] : d.reasons)
      w.Sample("exitscope_vmm_trips_total", L({{"domain", name}, {"reason", reason}}), std::to_string(r.vmm_trips));
  w.Family("exitscope_vcpu_exits", "counter", "", "VM exits by VM and vCPU index");
  for (const auto& [name, d] : metrics.domains)
    for (const auto& [vcpu, n] : d.vcpu_exits)
      w.Sample("exitscope_vcpu_exits_total", L({{"domain", name}, {"vcpu", VcpuLabel(vcpu)}}), std::to_string(n));
}

// KVM's counter name as a metric: "halt_wait_ns" -> ("exitscope_kvm_halt_wait_seconds", seconds).
std::pair<std::string, bool> KvmFamily(const std::string& counter) {
  if (counter.size() > 3 && counter.ends_with("_ns"))
    return {"exitscope_kvm_" + counter.substr(0, counter.size() - 3) + "_seconds", true};
  return {"exitscope_kvm_" + counter, false};
}

}  // namespace

std::vector<uint64_t> Log2HistogramBoundsNs() {
  std::vector<uint64_t> out;
  for (uint32_t k = 8; k < kLog2Buckets; ++k) out.push_back((uint64_t{1} << k) - 1);
  return out;
}

std::string RenderLog2Exposition(const Log2ExitMetrics& metrics, const ExporterSelf* self,
                                 const ExpositionOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  Writer w(options.format);
  WriteHeader(w, "bpf");
  WriteLog2Families(w, metrics);
  if (options.histogram_reasons > 0) WriteLog2Histograms(w, metrics, options.histogram_reasons);
  if (self) WriteSelf(w, *self, t0);
  return w.Finish();
}

std::string RenderKvmStatExposition(const KvmStatMetrics& metrics, const ExporterSelf* self,
                                    const ExpositionOptions& options) {
  auto t0 = std::chrono::steady_clock::now();
  Writer w(options.format);
  WriteHeader(w, "stats");
  w.Family("exitscope_kvm_stats_source", "info", "",
           "where a VM's KVM counters were read: stats-fd (KVM_GET_STATS_FD through the VMM's fds) or debugfs");
  for (const auto& [name, d] : metrics.domains)
    w.Sample("exitscope_kvm_stats_source_info", L({{"domain", name}, {"source", d.source}}), "1");
  std::set<std::string> present;
  for (const auto& [name, d] : metrics.domains)
    for (const auto& [counter, v] : d.counters) present.insert(counter);
  for (const std::string& counter : present) {
    auto [family, seconds] = KvmFamily(counter);
    w.Family(family, "counter", seconds ? "seconds" : "",
             "KVM's own " + counter + " counter of the VM (its vCPUs summed); no exit reasons");
    for (const auto& [name, d] : metrics.domains) {
      auto it = d.counters.find(counter);
      if (it == d.counters.end()) continue;
      w.Sample(family + "_total", L({{"domain", name}}), seconds ? Seconds(it->second) : std::to_string(it->second));
    }
  }
  w.Family("exitscope_kvm_vcpu_exits", "counter", "",
           "KVM's exits counter per vCPU (only where the stats fds were read: debugfs sums the vCPUs)");
  for (const auto& [name, d] : metrics.domains)
    for (const auto& [vcpu, counters] : d.vcpus)
      if (auto it = counters.find("exits"); it != counters.end())
        w.Sample("exitscope_kvm_vcpu_exits_total", L({{"domain", name}, {"vcpu", std::to_string(vcpu)}}),
                 std::to_string(it->second));
  if (self) WriteSelf(w, *self, t0);
  return w.Finish();
}

std::string_view ExpositionContentType(ExpositionFormat format) {
  return format == ExpositionFormat::kOpenMetrics ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                                  : "text/plain; version=0.0.4; charset=utf-8";
}

ExpositionFormat ExpositionFormatForAccept(std::string_view accept) {
  // Each offer: "type[;params]"; one with q=0 is refused (RFC 9110 12.5.1).
  while (!accept.empty()) {
    size_t comma = accept.find(',');
    std::string_view offer = accept.substr(0, comma);
    accept = comma == std::string_view::npos ? std::string_view() : accept.substr(comma + 1);
    while (!offer.empty() && offer.front() == ' ') offer.remove_prefix(1);
    if (!offer.starts_with("application/openmetrics-text")) continue;
    size_t q = offer.find("q=");
    double weight = q == std::string_view::npos ? 1 : std::strtod(std::string(offer.substr(q + 2)).c_str(), nullptr);
    if (weight > 0) return ExpositionFormat::kOpenMetrics;
  }
  return ExpositionFormat::kPrometheusText;
}

}  // namespace exitscope
