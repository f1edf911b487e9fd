// The cheaper observers' building blocks (issue 16): the BPF counter's map read back into `top`
// intervals (per-CPU sums, deltas between snapshots, log2 percentiles), KVM's debugfs counters
// parsed from a directory laid out as the kernel lays it out, and bench --observe's mode list.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "observe/bench_observe.h"
#include "observe/bpf_exit_reader.h"
#include "observe/bpf_exit_table.h"
#include "observe/kvm_debugfs_stats.h"
#include "observe/stats_top.h"

namespace exitscope {
namespace {
namespace fs = std::filesystem;

constexpr uint32_t kSvmCpuid = 0x72;  // SVM_EXIT_CPUID, arch/x86/include/uapi/asm/svm.h
constexpr uint32_t kSvmHlt = 0x78;    // SVM_EXIT_HLT
constexpr uint32_t kIsaSvm = 2;       // KVM_ISA_SVM, arch/x86/kvm/trace.h

exitscope_bpf_stats Stats(uint64_t exits, std::initializer_list<std::pair<int, uint64_t>> buckets,
                          uint64_t userspace = 0) {
  exitscope_bpf_stats s{};
  s.exits = exits;
  for (auto [b, n] : buckets) {
    s.hist[b] += n;
    s.timed += n;
    s.total_ns += n * (uint64_t{1} << b);
  }
  s.userspace = userspace;
  return s;
}

BpfExitEntry Entry(uint32_t tgid, uint32_t tid, uint32_t reason, exitscope_bpf_stats s) {
  BpfExitEntry e;
  e.key = {tgid, tid, reason, kIsaSvm};
  e.stats = s;
  return e;
}

TEST(BpfExitTable, SumsCpusAndKeepsTheVcpuId) {
  exitscope_bpf_stats cpus[3] = {Stats(2, {{10, 2}}), Stats(0, {{11, 1}}), Stats(5, {{10, 4}}, 1)};
  cpus[0].vcpu_id1 = 4;  // vcpu 3, seen by the CPU that took the exits
  exitscope_bpf_stats sum = SumPerCpu(cpus);
  EXPECT_EQ(sum.exits, 7u);
  EXPECT_EQ(sum.timed, 7u);
  EXPECT_EQ(sum.hist[10], 6u);
  EXPECT_EQ(sum.hist[11], 1u);
  EXPECT_EQ(sum.userspace, 1u);
  EXPECT_EQ(sum.vcpu_id1, 4u);
}

TEST(BpfExitTable, PercentileIsTheBucketMidpointByNearestRank) {
  exitscope_bpf_stats s = Stats(100, {{10, 50}, {12, 49}, {20, 1}});
  EXPECT_EQ(Log2BucketMid(10), 1536u);  // [1024, 2048)
  EXPECT_EQ(Log2Percentile(s.hist, 0.5), 1536u);
  EXPECT_EQ(Log2Percentile(s.hist, 0.51), Log2BucketMid(12));
  EXPECT_EQ(Log2Percentile(s.hist, 0.99), Log2BucketMid(12));
  EXPECT_EQ(Log2Percentile(s.hist, 1.0), Log2BucketMid(20));
  exitscope_bpf_stats empty{};
  EXPECT_EQ(Log2Percentile(empty.hist, 0.5), 0u);
}

TEST(BpfExitTable, IntervalsAreDifferencesOfCumulativeSnapshots) {
  BpfExitTable table({}, "/nonexistent-proc");
  std::vector<BpfExitEntry> first = {Entry(100, 101, kSvmCpuid, Stats(1000, {{11, 1000}})),
                                     Entry(100, 102, kSvmHlt, Stats(3, {{20, 2}}, 0))};
  BpfInterval a = table.TakeInterval(first, 1.0, 0);
  EXPECT_EQ(a.top.exits, 1003u);
  ASSERT_EQ(a.top.reasons.size(), 2u);
  EXPECT_EQ(a.top.reasons[0].label, "cpuid");
  EXPECT_EQ(a.top.reasons[0].exits, 1000u);
  EXPECT_EQ(a.top.reasons[0].p50_ns, Log2BucketMid(11));
  EXPECT_EQ(a.top.reasons[1].label, "hlt");
  EXPECT_EQ(a.extra["hlt"].untimed, 1u);  // one HLT still in flight at the snapshot
  ASSERT_EQ(a.top.vcpus.size(), 2u);

  // 500 more CPUIDs on thread 101, of which 2 went to the VMM; HLT did nothing more.
  std::vector<BpfExitEntry> second = {Entry(100, 101, kSvmCpuid, Stats(1500, {{11, 1400}, {13, 100}}, 2)),
                                      Entry(100, 102, kSvmHlt, Stats(3, {{20, 2}}))};
  BpfInterval b = table.TakeInterval(second, 0.5, 0);
  EXPECT_EQ(b.top.exits, 500u);
  ASSERT_EQ(b.top.reasons.size(), 1u);
  EXPECT_EQ(b.top.reasons[0].exits, 500u);
  EXPECT_DOUBLE_EQ(b.top.reasons[0].exits_per_s, 1000.0);
  EXPECT_EQ(b.top.reasons[0].p50_ns, Log2BucketMid(11));  // 400 of 500 in bucket 11
  EXPECT_EQ(b.top.reasons[0].p90_ns, Log2BucketMid(13));
  EXPECT_EQ(b.extra["cpuid"].vmm_trips, 2u);
  ASSERT_EQ(b.top.vcpus.size(), 1u);
  EXPECT_EQ(b.top.vcpus[0].tid, 101);

  nlohmann::json j = nlohmann::json::parse(RenderBpfTopJson(b));
  EXPECT_EQ(j["schema"], "exitscope.top/1");
  EXPECT_EQ(j["mode"], "bpf");
  EXPECT_EQ(j["reasons"][0]["reason"], "cpuid");
  EXPECT_EQ(j["reasons"][0]["vmm_trips"], 2);
  EXPECT_NE(RenderBpfTopText(b).find("mode bpf"), std::string::npos);
}

TEST(BpfExitTable, ReasonFilter) {
  BpfExitTable table("hlt", "/nonexistent-proc");
  BpfInterval a = table.TakeInterval(
      {Entry(1, 1, kSvmCpuid, Stats(9, {{9, 9}})), Entry(1, 1, kSvmHlt, Stats(4, {{9, 4}}))}, 1.0, 0);
  ASSERT_EQ(a.top.reasons.size(), 1u);
  EXPECT_EQ(a.top.reasons[0].label, "hlt");
  EXPECT_EQ(a.top.exits, 4u);
}

// A debugfs kvm/ directory as Linux 6.1 lays it out: global sums at the top, one <pid>-<fd>
// directory per VM with a file per VM and vCPU stat (a decimal number and a newline), vcpuN/
// subdirectories, and x86's mmu_rmaps_stat table that is not a counter.
class KvmDebugfs : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("exitscope-debugfs-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "4242-11" / "vcpu0");
    fs::create_directories(root_ / "4300-9" / "vcpu0");
    Write("exits", "2501\n");  // global: the sum over VMs, not a VM
    Write("4242-11/exits", "2500\n");
    Write("4242-11/halt_exits", "3\n");
    Write("4242-11/io_exits", "7\n");
    Write("4242-11/halt_wait_ns", "123456789\n");
    Write("4242-11/remote_tlb_flush", "0\n");
    Write("4242-11/mmu_rmaps_stat", "Rmap_Count:\t0\t1\t2-3\n\tLevel=4K:\t3\t0\t0\n");
    Write("4242-11/vcpu0/tsc-offset", "-123456\n");
    Write("4300-9/exits", "1\n");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) { std::ofstream(root_ / rel) << text; }
  fs::path root_;
};

TEST_F(KvmDebugfs, ReadsEachVmsCounters) {
  auto vms = ReadKvmDebugfs(root_.string());
  ASSERT_TRUE(vms.ok()) << vms.error().message;
  ASSERT_EQ(vms->size(), 2u);
  const KvmVmCounters& a = (*vms)[0];
  EXPECT_EQ(a.pid, 4242);
  EXPECT_EQ(a.vm_fd, 11);
  EXPECT_EQ(a.counters.at("exits"), 2500u);
  EXPECT_EQ(a.counters.at("halt_wait_ns"), 123456789u);
  EXPECT_EQ(a.counters.count("mmu_rmaps_stat"), 0u);  // a table, not a counter
  EXPECT_EQ(a.counters.count("tsc-offset"), 0u);      // a vCPU subdirectory's, not the VM's
  EXPECT_EQ((*vms)[1].pid, 4300);
}

TEST_F(KvmDebugfs, MissingDirectoryIsUnavailable) {
  auto vms = ReadKvmDebugfs((root_ / "nope").string());
  ASSERT_FALSE(vms.ok());
  EXPECT_EQ(vms.error().code, kExitUnavailable);
  EXPECT_FALSE(vms.error().hint.empty());
}

TEST_F(KvmDebugfs, IntervalsShowGrowthPerVm) {
  StatsTopTable table(0, "/nonexistent-proc");
  auto first = ReadKvmDebugfs(root_.string());
  ASSERT_TRUE(first.ok());
  (void)table.TakeInterval(*first, 0);
  Write("4242-11/exits", "3100\n");
  Write("4242-11/io_exits", "9\n");
  auto second = ReadKvmDebugfs(root_.string());
  ASSERT_TRUE(second.ok());
  StatsInterval t = table.TakeInterval(*second, 2.0);
  ASSERT_EQ(t.vms.size(), 2u);
  EXPECT_EQ(t.vms[0].pid, 4242);
  EXPECT_EQ(t.vms[0].deltas[0], (std::pair<std::string, uint64_t>{"exits", 600}));  // exits first
  nlohmann::json j = nlohmann::json::parse(RenderStatsTopJson(t));
  EXPECT_EQ(j["schema"], "exitscope.top-stats/1");
  EXPECT_EQ(j["vms"][0]["counters"]["exits"], 600);
  EXPECT_EQ(j["vms"][0]["counters"]["io_exits"], 2);
  EXPECT_EQ(j["vms"][0]["counters"]["halt_exits"], 0);
  EXPECT_NE(RenderStatsTopText(t, 0).find("coarse"), std::string::npos);
}

TEST(StatsTopTable, PerVcpuExitsAndTheSourceFromStatsFds) {
  StatsTopTable table(0, "/nonexistent-proc");
  KvmVmCounters vm{7, 11, {{"exits", 100}}, "stats-fd", {{0, {{"exits", 70}}}, {1, {{"exits", 30}}}}};
  (void)table.TakeInterval({vm}, 0);
  vm.counters["exits"] = 160;
  vm.vcpus[0]["exits"] = 120;
  vm.vcpus[1]["exits"] = 40;
  StatsInterval t = table.TakeInterval({vm}, 1.0);
  ASSERT_EQ(t.vms.size(), 1u);
  EXPECT_EQ(t.vms[0].vcpu_exits, (std::map<int, uint64_t>{{0, 50}, {1, 10}}));
  nlohmann::json j = nlohmann::json::parse(RenderStatsTopJson(t));
  EXPECT_EQ(j["vms"][0]["source"], "stats-fd");
  EXPECT_EQ(j["vms"][0]["vcpu_exits"]["0"], 50);
  EXPECT_NE(RenderStatsTopText(t, 0).find("stats-fd"), std::string::npos);
  KvmVmCounters from_debugfs{7, 11, {{"exits", 170}}, "debugfs", {}};
  nlohmann::json d = nlohmann::json::parse(RenderStatsTopJson(table.TakeInterval({from_debugfs}, 1.0)));
  EXPECT_EQ(d["vms"][0]["source"], "debugfs");
  EXPECT_FALSE(d["vms"][0].contains("vcpu_exits"));  // debugfs sums the vCPUs
}

TEST(CounterDelta, NewVmCountsFromZeroAndAShrinkIsARestart) {
  KvmVmCounters now{1, 2, {{"exits", 50}}, "debugfs", {}};
  EXPECT_EQ(CounterDelta(now, nullptr).at("exits"), 50u);
  KvmVmCounters before{1, 2, {{"exits", 80}}, "debugfs", {}};
  EXPECT_EQ(CounterDelta(now, &before).at("exits"), 50u);
}

TEST(ObserveModes, ParsesAndRejects) {
  auto m = ParseObserveModes("none,bpf,,bpf,tracefs-minimal");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(*m, (std::vector<std::string>{"none", "bpf", "tracefs-minimal"}));
  auto bad = ParseObserveModes("none,ebpf");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, kExitUsage);
  EXPECT_NE(bad.error().hint.find("tracefs-minimal"), std::string::npos);
  EXPECT_FALSE(ParseObserveModes(",").ok());
}

// An arm64 host's kvm_exit (ret, esr_ec, vcpu_pc: the real 6.1 kernel's format) has no exit_reason for
// the BPF program to count by: BPF mode refuses, says why and points at tracefs mode, rather than
// counting a field that is not there. (A cross-built arm64 exitscope carries no BPF program at all
// and says that instead: the kvmhost-arm64 check live_bpf_refused.)
TEST(BpfExitReader, RefusesArm64KvmExitLayout) {
  const fs::path dir = fs::temp_directory_path() / ("exitscope-bpf-arm64-" + std::to_string(::getpid()));
  fs::create_directories(dir / "events/kvm/kvm_exit");
  fs::copy_file(std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-arm64-6.1/formats/kvm_exit.format",
                dir / "events/kvm/kvm_exit/format", fs::copy_options::overwrite_existing);
  auto reader = BpfExitReader::Load({.tracefs = dir.string()});
  fs::remove_all(dir);
  ASSERT_FALSE(reader.ok());
  EXPECT_EQ(reader.error().tag, "observe.bpf-unavailable");
  EXPECT_EQ(reader.error().code, 69);
  if (BpfExitReader::Built()) {
    EXPECT_NE(reader.error().message.find("arm64"), std::string::npos) << reader.error().message;
    EXPECT_NE(reader.error().hint.find("--mode tracefs"), std::string::npos) << reader.error().hint;
  } else {
    EXPECT_NE(reader.error().message.find("built without"), std::string::npos) << reader.error().message;
  }
}

}  // namespace
}  // namespace exitscope
