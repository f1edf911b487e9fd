// ExitAggregator's filters (analysis/exit_aggregator.h ReportOptions: --pid, --vcpu, --reason,
// --from, --to) on synthetic ExitSamples, where each one's expected effect is known, and on the real
// hip24-vmx trace, where the filtered reports must partition the unfiltered one.
#include "analysis/exit_aggregator.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <vector>

#include "pipeline/input_detector.h"

namespace exitscope {
namespace {

const std::string kVmx = std::string(EXITSCOPE_SHARED_DIR) + "/traces/hip24-vmx/host-2vcpu-6.5.dat";

constexpr uint64_t kOriginNs = 5'000'000'000;
// vmx.h EXIT_REASON_HLT 12, EXIT_REASON_EPT_VIOLATION 48; svm.h SVM_EXIT_HLT 0x78, SVM_EXIT_NPF 0x400.
constexpr uint32_t kVmxHlt = 12, kVmxEptViolation = 48, kSvmHlt = 0x78, kSvmNpf = 0x400;

ExitSample Sample(int32_t tid, int32_t vcpu, Isa isa, uint32_t reason, double at_s, uint64_t dur_ns = 1000) {
  ExitSample s;
  s.tid = tid;
  s.vcpu_id = vcpu;
  s.exit_cpu = s.entry_cpu = vcpu < 0 ? 0 : vcpu;
  s.isa = isa;
  s.reason = reason;
  s.ts_ns = kOriginNs + static_cast<uint64_t>(at_s * 1e9);
  s.dur_ns = dur_ns;
  return s;
}

// Two VMs (processes 100 and 200) with two vCPU threads each; times 0.5 s apart.
TraceMeta TwoVms() {
  TraceMeta m;
  m.tgid_by_tid = {{101, 100}, {102, 100}, {201, 200}, {202, 200}};
  return m;
}

std::vector<ExitSample> TwoVmSamples() {
  return {Sample(101, 0, Isa::kVmx, kVmxHlt, 0.0),          Sample(102, 1, Isa::kVmx, kVmxEptViolation, 0.5),
          Sample(101, 0, Isa::kVmx, kVmxEptViolation, 1.0), Sample(201, 0, Isa::kVmx, kVmxHlt, 1.5),
          Sample(202, 1, Isa::kVmx, kVmxHlt, 2.0),          Sample(202, 1, Isa::kVmx, kVmxHlt, 2.5)};
}

struct Counted {
  uint64_t exits = 0;  // totals over every group
  uint64_t filtered_out = 0;
  std::map<std::string, uint64_t> by_reason;
  std::set<int64_t> groups;
};

Counted Aggregate(const TraceMeta& meta, const ReportOptions& o, const std::vector<ExitSample>& timed,
                  const std::vector<ExitSample>& untimed = {}) {
  ExitAggregator agg(meta, o);
  agg.SetOrigin(kOriginNs);
  for (const ExitSample& s : timed) agg.OnExitSample(s);
  for (const ExitSample& s : untimed) agg.OnUntimedExit(s);
  Report r;
  agg.Fill(&r);
  Counted c;
  c.filtered_out = agg.filtered_out();
  for (const GroupReport& g : r.groups) {
    c.exits += g.count;
    c.groups.insert(g.id);
    for (const ReasonRow& row : g.reasons) c.by_reason[row.name] += row.count;
  }
  return c;
}

TEST(ExitAggregator, NoFilterCountsEverything) {
  Counted c = Aggregate(TwoVms(), {}, TwoVmSamples());
  EXPECT_EQ(c.exits, 6u);
  EXPECT_EQ(c.filtered_out, 0u);
  EXPECT_EQ(c.by_reason["HLT"], 4u);
  EXPECT_EQ(c.by_reason["EPT_VIOLATION"], 2u);
}

TEST(ExitAggregator, PidSelectsAVmProcessOrOneThread) {
  ReportOptions o;
  o.pid = 100;  // the VM process: both its vCPU threads
  Counted vm = Aggregate(TwoVms(), o, TwoVmSamples());
  EXPECT_EQ(vm.exits, 3u);
  EXPECT_EQ(vm.filtered_out, 3u);
  o.pid = 202;  // one thread
  Counted thread = Aggregate(TwoVms(), o, TwoVmSamples());
  EXPECT_EQ(thread.exits, 2u);
  EXPECT_EQ(thread.by_reason["HLT"], 2u);
  o.pid = 999;
  EXPECT_EQ(Aggregate(TwoVms(), o, TwoVmSamples()).exits, 0u);
}

TEST(ExitAggregator, VcpuMatchesTheTracedIndexOrTheGuestOption) {
  ReportOptions o;
  o.vcpu = 1;
  Counted c = Aggregate(TwoVms(), o, TwoVmSamples());
  EXPECT_EQ(c.exits, 3u);  // tid 102 once, tid 202 twice
  // A kernel whose kvm_exit lacks vcpu_id: the GUEST option (trace.dat) maps the thread.
  TraceMeta m = TwoVms();
  GuestInfo g;
  g.name = "guest";
  g.vcpu_to_host_tid = {{0, 301}, {1, 302}};
  m.guests.push_back(g);
  std::vector<ExitSample> old = {Sample(301, -1, Isa::kVmx, kVmxHlt, 0.1), Sample(302, -1, Isa::kVmx, kVmxHlt, 0.2),
                                 Sample(302, -1, Isa::kVmx, kVmxHlt, 0.3)};
  Counted guest = Aggregate(m, o, old);
  EXPECT_EQ(guest.exits, 2u);
  EXPECT_EQ(guest.filtered_out, 1u);
}

TEST(ExitAggregator, ReasonIsTheBasicReasonOnEitherIsa) {
  ReportOptions o;
  o.reason = "EPT_VIOLATION";
  // VMX flag bits 31..16 (vmx.h VMX_EXIT_REASONS_FAILED_VMENTRY and the rest) do not hide the reason.
  std::vector<ExitSample> s = TwoVmSamples();
  s.push_back(Sample(101, 0, Isa::kVmx, kVmxEptViolation | 0x08000000u, 3.0));
  EXPECT_EQ(Aggregate(TwoVms(), o, s).exits, 3u);
  // "HLT" names both ISAs' halt exit.
  o.reason = "HLT";
  std::vector<ExitSample> mixed = {Sample(101, 0, Isa::kVmx, kVmxHlt, 0.1), Sample(201, 0, Isa::kSvm, kSvmHlt, 0.2),
                                   Sample(201, 0, Isa::kSvm, kSvmNpf, 0.3)};
  Counted hlt = Aggregate(TwoVms(), o, mixed);
  EXPECT_EQ(hlt.exits, 2u);
  EXPECT_EQ(hlt.filtered_out, 1u);
  o.reason = "npf";
  EXPECT_EQ(Aggregate(TwoVms(), o, mixed).exits, 1u);
  o.reason = "no_such_reason";
  EXPECT_EQ(Aggregate(TwoVms(), o, mixed).exits, 0u);
}

TEST(ExitAggregator, FromToIsAHalfOpenWindowFromTheOrigin) {
  ReportOptions o;
  o.from_s = 1.0;
  o.to_s = 2.0;
  Counted c = Aggregate(TwoVms(), o, TwoVmSamples());
  EXPECT_EQ(c.exits, 2u);  // at 1.0 s and 1.5 s; the one at 2.0 s is past the window
  o.from_s.reset();
  EXPECT_EQ(Aggregate(TwoVms(), o, TwoVmSamples()).exits, 4u);
  o.to_s.reset();
  o.from_s = 2.5;
  EXPECT_EQ(Aggregate(TwoVms(), o, TwoVmSamples()).exits, 1u);
}

TEST(ExitAggregator, FiltersCombineAndApplyToUntimedExits) {
  ReportOptions o;
  o.pid = 200;
  o.reason = "HLT";
  o.to_s = 2.2;
  std::vector<ExitSample> untimed = {Sample(201, 0, Isa::kVmx, kVmxHlt, 0.7, 0),
                                     Sample(101, 0, Isa::kVmx, kVmxHlt, 0.8, 0)};
  Counted c = Aggregate(TwoVms(), o, TwoVmSamples(), untimed);
  EXPECT_EQ(c.exits, 3u);  // 201 @1.5, 202 @2.0, and the untimed 201 @0.7
  EXPECT_EQ(c.filtered_out, 5u);
}

TEST(ExitAggregator, GroupByVmKeepsFiltersPerGroup) {
  ReportOptions o;
  o.by = GroupBy::kVm;
  o.reason = "HLT";
  Counted c = Aggregate(TwoVms(), o, TwoVmSamples());
  EXPECT_EQ(c.groups, (std::set<int64_t>{100, 200}));
  EXPECT_EQ(c.exits, 4u);
}

// On a real trace: the per-vCPU reports add up to the whole, so do the per-reason ones, and two
// adjacent windows add up to the window that spans both.
TEST(ExitAggregator, RealTraceFiltersPartitionTheReport) {
  auto src = OpenKvmEventSource(kVmx);
  ASSERT_TRUE(src.ok()) << src.error().message;
  struct Collect : ExitSampleSink {
    std::vector<ExitSample> timed, untimed;
    void OnExitSample(const ExitSample& s) override { timed.push_back(s); }
    void OnUntimedExit(const ExitSample& s) override { untimed.push_back(s); }
  } all;
  Diagnostics diag;
  const TraceMeta& meta = (*src)->meta();
  ExitPairer pairer(meta, &diag, &all);
  KvmEvent e;
  LostEvents lost;
  uint64_t first_ts = 0;
  while ((*src)->Next(&e, &lost)) {
    if (lost.cpu >= 0) pairer.OnLost(lost);
    lost.cpu = -1;  // a source writes it only when a marker precedes the event
    if (!first_ts) first_ts = e.ts_ns;
    pairer.OnEvent(e);
  }
  pairer.Finish();
  ASSERT_GT(all.timed.size(), 10000u);

  auto run = [&](const ReportOptions& o) {
    ExitAggregator agg(meta, o);
    agg.SetOrigin(first_ts);
    for (const ExitSample& s : all.timed) agg.OnExitSample(s);
    for (const ExitSample& s : all.untimed) agg.OnUntimedExit(s);
    Report r;
    agg.Fill(&r);
    std::map<std::string, uint64_t> by_reason;
    uint64_t n = 0;
    for (const GroupReport& g : r.groups) {
      n += g.count;
      for (const ReasonRow& row : g.reasons) by_reason[row.name] += row.count;
    }
    return std::make_pair(n, by_reason);
  };
  auto [total, reasons] = run({});
  EXPECT_EQ(total, all.timed.size() + all.untimed.size());
  ASSERT_GE(reasons.size(), 3u);

  uint64_t vcpu_sum = 0;
  for (int32_t v : {0, 1}) {
    ReportOptions o;
    o.vcpu = v;
    uint64_t n = run(o).first;
    EXPECT_GT(n, 0u) << "vcpu " << v;
    vcpu_sum += n;
  }
  EXPECT_EQ(vcpu_sum, total);

  uint64_t reason_sum = 0;
  for (const auto& [name, count] : reasons) {
    ReportOptions o;
    o.reason = name;
    EXPECT_EQ(run(o).first, count) << name;
    reason_sum += count;
  }
  EXPECT_EQ(reason_sum, total);

  double span_s = static_cast<double>(all.timed.back().ts_ns - first_ts) * 1e-9;
  ReportOptions first_half, second_half;
  first_half.to_s = span_s / 2;
  second_half.from_s = span_s / 2;
  uint64_t a = run(first_half).first, b = run(second_half).first;
  EXPECT_GT(a, 0u);
  EXPECT_GT(b, 0u);
  EXPECT_EQ(a + b, total);
}

// Issue 19: --by vm labelled each VM by scanning every thread (100k threads with no recorded process
// are 100k VMs: 10^10 steps, killed after 20 s). Even tids are QEMU vCPU threads ("CPU 0/KVM": a VM
// of their own, id = tid), odd ones lone threads without a comm.
TEST(ExitAggregatorScale, HundredThousandDistinctThreadsByVm) {
  constexpr int32_t kThreads = 100'000, kFirstTid = 10'000;
  TraceMeta meta;
  for (int32_t tid = kFirstTid; tid < kFirstTid + kThreads; tid += 2) meta.comm_by_tid[tid] = "CPU 0/KVM";
  ReportOptions o;
  o.by = GroupBy::kVm;
  ExitAggregator agg(meta, o);
  agg.SetOrigin(kOriginNs);
  for (int32_t i = 0; i < kThreads; ++i) agg.OnExitSample(Sample(kFirstTid + i, -1, Isa::kVmx, kVmxHlt, 0.001 * i));
  Report report;
  agg.Fill(&report);
  ASSERT_EQ(report.groups.size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(report.context.vms.size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(report.context.vcpu_threads, static_cast<uint64_t>(kThreads));
  EXPECT_EQ(report.totals.reported, static_cast<uint64_t>(kThreads));
  std::map<int64_t, std::string> label_by_id;
  for (const GroupReport& g : report.groups) {
    EXPECT_EQ(g.count, 1u);
    label_by_id[g.id] = g.label;
  }
  ASSERT_EQ(label_by_id.size(), static_cast<size_t>(kThreads));
  EXPECT_EQ(label_by_id[kFirstTid + 42],
            "QEMU (process not recorded; vCPU threads grouped by name and consecutive tids: tid 10042 CPU 0/KVM)");
  EXPECT_EQ(label_by_id[kFirstTid + 43], "tid 10043, process not recorded");
}

}  // namespace
}  // namespace exitscope
