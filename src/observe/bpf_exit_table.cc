#include "observe/bpf_exit_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <tuple>

#include "model/kvm_event.h"
#include "report/top_reporter.h"

namespace exitscope {
namespace {

constexpr int kBuckets = EXITSCOPE_BPF_HIST_BUCKETS;

}  // namespace

Isa BpfKeyIsa(uint32_t field) {
  if (field == kKvmIsaVmx) return Isa::kVmx;
  if (field == kKvmIsaSvm) return Isa::kSvm;
  return Isa::kUnknown;
}

exitscope_bpf_stats BpfStatsMinus(const exitscope_bpf_stats& now, const exitscope_bpf_stats& before) {
  exitscope_bpf_stats d = now;
  d.exits -= std::min(before.exits, now.exits);
  d.timed -= std::min(before.timed, now.timed);
  d.total_ns -= std::min(before.total_ns, now.total_ns);
  d.userspace -= std::min(before.userspace, now.userspace);
  for (int b = 0; b < kBuckets; ++b) d.hist[b] -= std::min(before.hist[b], now.hist[b]);
  return d;
}

namespace {

void Add(exitscope_bpf_stats* acc, const exitscope_bpf_stats& s) {
  acc->exits += s.exits;
  acc->timed += s.timed;
  acc->total_ns += s.total_ns;
  acc->userspace += s.userspace;
  acc->vcpu_id1 = std::max(acc->vcpu_id1, s.vcpu_id1);
  for (int b = 0; b < kBuckets; ++b) acc->hist[b] += s.hist[b];
}

struct Group {
  std::string label;
  int32_t pid = -1, tid = -1, vcpu = -1;
  exitscope_bpf_stats s{};
};

TopRow RowOf(const Group& g, double interval_s) {
  TopRow r;
  r.label = g.label;
  r.pid = g.pid;
  r.tid = g.tid;
  r.vcpu = g.vcpu;
  r.exits = g.s.exits;
  r.exits_per_s = interval_s > 0 ? g.s.exits / interval_s : 0;
  r.timed = g.s.timed;
  r.p50_ns = Log2Percentile(g.s.hist, 0.5);
  r.p90_ns = Log2Percentile(g.s.hist, 0.9);
  r.p99_ns = Log2Percentile(g.s.hist, 0.99);
  for (int b = kBuckets - 1; b >= 0; --b) {
    if (g.s.hist[b]) {
      r.max_ns = (uint64_t{1} << (b + 1)) - 1;  // the top bucket's upper bound: all a log2 bucket says
      break;
    }
  }
  r.total_ns = g.s.total_ns;
  return r;
}

std::vector<TopRow> Rows(const std::map<std::string, Group>& groups, double interval_s, size_t max_rows) {
  std::vector<TopRow> rows;
  for (const auto& [k, g] : groups) rows.push_back(RowOf(g, interval_s));
  std::sort(rows.begin(), rows.end(), [](const TopRow& a, const TopRow& b) {
    return a.exits != b.exits ? a.exits > b.exits : a.label < b.label;
  });
  if (max_rows && rows.size() > max_rows) rows.resize(max_rows);
  return rows;
}

}  // namespace

exitscope_bpf_stats SumPerCpu(std::span<const exitscope_bpf_stats> cpus) {
  exitscope_bpf_stats sum{};
  for (const auto& c : cpus) Add(&sum, c);
  return sum;
}

uint64_t Log2BucketMid(uint32_t b) {
  if (b == 0) return 1;
  return (uint64_t{1} << b) + (uint64_t{1} << (b - 1));
}

uint64_t Log2Percentile(const __u64 (&hist)[EXITSCOPE_BPF_HIST_BUCKETS], double q) {
  uint64_t n = 0;
  for (uint64_t c : hist) n += c;
  if (n == 0) return 0;
  // Nearest rank: the smallest bucket holding at least ceil(q * n) values.
  uint64_t rank = std::max<uint64_t>(1, static_cast<uint64_t>(q * static_cast<double>(n) + 0.999999));
  uint64_t seen = 0;
  for (uint32_t b = 0; b < kBuckets; ++b) {
    seen += hist[b];
    if (seen >= rank) return Log2BucketMid(b);
  }
  return Log2BucketMid(kBuckets - 1);
}

BpfInterval BpfExitTable::TakeInterval(const std::vector<BpfExitEntry>& snapshot, double interval_s, size_t max_rows) {
  BpfInterval out;
  TopInterval& t = out.top;
  t.index = ++index_;
  t.interval_s = interval_s;
  std::map<std::string, Group> reasons, vms, vcpus;
  for (const BpfExitEntry& e : snapshot) {
    auto id = std::make_tuple(e.key.tgid, e.key.tid, e.key.reason, e.key.isa);
    exitscope_bpf_stats d = e.stats;
    if (auto it = last_.find(id); it != last_.end()) d = BpfStatsMinus(e.stats, it->second);
    last_[id] = e.stats;
    if (d.exits == 0 && d.timed == 0) continue;
    Isa isa = BpfKeyIsa(e.key.isa);
    if (isa == Isa::kUnknown) isa = host_isa_;
    if (!reason_filter_.empty() && !reason_codes_.Matches(isa, e.key.reason)) continue;
    const std::string reason = ExitReasonName(isa, e.key.reason);
    Group& r = reasons[reason];
    r.label = reason;
    Add(&r.s, d);
    BpfReasonExtra& x = out.extra[reason];
    x.vmm_trips += d.userspace;
    const int32_t tid = static_cast<int32_t>(e.key.tid);
    const LiveVm& live = vms_dir_.VmOf(tid);
    Group& vm = vms[fmt::format("{:010}", live.pid)];
    if (vm.label.empty()) {
      vm.label = fmt::format("{} ({})", live.domain, live.pid);
      vm.pid = live.pid;
    }
    Add(&vm.s, d);
    Group& v = vcpus[fmt::format("{:010}", tid)];
    if (v.label.empty()) {
      const int32_t vcpu_id = d.vcpu_id1 ? static_cast<int32_t>(d.vcpu_id1 - 1) : -1;
      std::optional<int32_t> vcpu = vms_dir_.VcpuOf(tid, vcpu_id);
      v.pid = live.pid;
      v.tid = tid;
      v.vcpu = vcpu.value_or(-1);
      v.label = vcpu ? fmt::format("{} vcpu {} (tid {})", live.domain, *vcpu, tid)
                     : fmt::format("{} tid {}", live.domain, tid);
    }
    Add(&v.s, d);
  }
  for (auto& [label, g] : reasons) {
    out.extra[label].untimed = g.s.exits - std::min(g.s.exits, g.s.timed);
    t.exits += g.s.exits;
  }
  t.exits_per_s = interval_s > 0 ? t.exits / interval_s : 0;
  t.reasons = Rows(reasons, interval_s, max_rows);
  t.vms = Rows(vms, interval_s, max_rows);
  t.vcpus = Rows(vcpus, interval_s, max_rows);
  t.lost_per_cpu.clear();  // nothing is transferred per event, so nothing can be lost
  vms_dir_.Revalidate();
  return out;
}

std::string RenderBpfTopJson(const BpfInterval& t) {
  nlohmann::ordered_json j = nlohmann::ordered_json::parse(RenderTopJson(t.top));
  j["mode"] = "bpf";
  j["percentiles"] = "log2 bucket midpoints (in-kernel histogram)";
  for (auto& r : j["reasons"]) {
    auto it = t.extra.find(r["reason"].get<std::string>());
    if (it == t.extra.end()) continue;
    r["untimed"] = it->second.untimed;
    r["vmm_trips"] = it->second.vmm_trips;
  }
  return j.dump();
}

std::string RenderBpfTopText(const BpfInterval& t) {
  std::string text = RenderTopText(t.top);
  uint64_t trips = 0;
  for (const auto& [k, x] : t.extra) trips += x.vmm_trips;
  text += fmt::format(
      "mode bpf: counted in the kernel (no events copied out); percentiles are log2-bucket "
      "midpoints; trips to the VMM {}\n",
      trips);
  return text;
}

}  // namespace exitscope
