#include "observe/stats_top.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/json_schema.h"

namespace exitscope {
namespace {

constexpr const char* kStatsNote =
    "KVM's own counters (its binary stats fds, else debugfs kvm/<pid>-<fd>): coarse exit kinds only, no "
    "per-reason split, no handling time; no tracing, so no cost per exit";

uint64_t Exits(const StatsVmRow& r) {
  for (const auto& [k, v] : r.deltas)
    if (k == "exits") return v;
  return 0;
}

}  // namespace

StatsInterval StatsTopTable::TakeInterval(const std::vector<KvmVmCounters>& now, double interval_s) {
  StatsInterval t;
  t.index = ++index_;
  t.interval_s = interval_s;
  std::map<std::pair<int, int>, KvmVmCounters> seen;
  for (const KvmVmCounters& vm : now) {
    if (pid_filter_ > 0 && vm.pid != pid_filter_) continue;
    auto id = std::make_pair(vm.pid, vm.vm_fd);
    auto it = last_.find(id);
    auto delta = CounterDelta(vm, it == last_.end() ? nullptr : &it->second);
    StatsVmRow row;
    row.pid = vm.pid;
    row.vm_fd = vm.vm_fd;
    row.label = fmt::format("{} ({})", vms_dir_.VmOf(vm.pid).domain, vm.pid);
    for (const std::string& name : KvmExitCounterOrder()) {
      if (auto d = delta.find(name); d != delta.end()) {
        row.deltas.emplace_back(name, d->second);
        delta.erase(d);
      }
    }
    for (const auto& [name, v] : delta) row.deltas.emplace_back(name, v);
    row.source = vm.source;
    for (const auto& [index, counters] : vm.vcpus) {
      auto now_exits = counters.find("exits");
      if (now_exits == counters.end()) continue;
      uint64_t before = 0;
      if (it != last_.end()) {
        if (auto v = it->second.vcpus.find(index); v != it->second.vcpus.end()) {
          if (auto e = v->second.find("exits"); e != v->second.end()) before = e->second;
        }
      }
      row.vcpu_exits[index] = now_exits->second >= before ? now_exits->second - before : now_exits->second;
    }
    t.vms.push_back(std::move(row));
    seen[id] = vm;
  }
  last_ = std::move(seen);
  std::stable_sort(t.vms.begin(), t.vms.end(),
                   [](const StatsVmRow& a, const StatsVmRow& b) { return Exits(a) > Exits(b); });
  vms_dir_.Revalidate();
  return t;
}

std::string RenderStatsTopJson(const StatsInterval& t) {
  nlohmann::ordered_json j;
  TagSchema(&j, "top-stats", 1);
  j["mode"] = "stats";
  j["note"] = kStatsNote;
  j["interval"] = t.index;
  j["interval_s"] = t.interval_s;
  nlohmann::ordered_json vms = nlohmann::ordered_json::array();
  for (const StatsVmRow& r : t.vms) {
    nlohmann::ordered_json v = {{"vm", r.label}, {"pid", r.pid}, {"vm_fd", r.vm_fd}, {"source", r.source}};
    nlohmann::ordered_json c = nlohmann::ordered_json::object();
    for (const auto& [k, d] : r.deltas) c[k] = d;
    v["counters"] = std::move(c);
    if (r.source == "stats-fd") {
      nlohmann::ordered_json vc = nlohmann::ordered_json::object();
      for (const auto& [index, n] : r.vcpu_exits) vc[std::to_string(index)] = n;
      v["vcpu_exits"] = std::move(vc);
    }
    vms.push_back(std::move(v));
  }
  j["vms"] = std::move(vms);
  return j.dump();
}

std::string RenderStatsTopText(const StatsInterval& t, size_t max_counters) {
  std::string out =
      fmt::format("exitscope top --mode stats   interval {}  {:.2f} s\n{}\n", t.index, t.interval_s, kStatsNote);
  if (t.vms.empty()) out += "no VM in debugfs kvm/\n";
  for (const StatsVmRow& r : t.vms) {
    out += fmt::format("\n{}  (vm fd {}, {})\n", r.label, r.vm_fd, r.source);
    size_t n = 0;
    for (const auto& [k, d] : r.deltas) {
      if (max_counters && n++ >= max_counters) break;
      const double per_s = t.interval_s > 0 ? d / t.interval_s : 0;
      out += fmt::format("  {:<24} {:>14}  {:>12.1f}/s\n", k, d, per_s);
    }
    for (const auto& [index, n] : r.vcpu_exits)
      out += fmt::format("  vcpu {:<3} exits{:>19} {:>14.1f}/s\n", index, n, t.interval_s > 0 ? n / t.interval_s : 0);
  }
  return out;
}

}  // namespace exitscope
