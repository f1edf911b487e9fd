// serve's counting observers (issue 16): the expositions of `serve --mode bpf` and `serve --mode
// stats` built from snapshots (deltas, naming, absent families, exact log2 bounds), each checked by
// promtool.
#include <gtest/gtest.h>
#include <unistd.h>

#include "observe/counted_tracker.h"
#include "report/openmetrics_reporter.h"
#include "test_util.h"

namespace exitscope {
namespace {
constexpr uint32_t kSvmCpuid = 0x72;  // SVM_EXIT_CPUID, arch/x86/include/uapi/asm/svm.h
constexpr uint32_t kSvmHlt = 0x78;    // SVM_EXIT_HLT
constexpr uint32_t kIsaSvm = 2;       // KVM_ISA_SVM, arch/x86/kvm/trace.h

std::string Promtool(const std::string& exposition) {
  std::string path = ::testing::TempDir() + "exitscope-counted-" + std::to_string(::getpid()) + ".txt";
  if (!testing::WriteFile(path, exposition)) return "cannot write " + path;
  testing::CommandResult r = testing::RunCommand("promtool check metrics < '" + path + "' 2>&1");
  std::remove(path.c_str());
  return r.status == 0 ? "" : "promtool: " + r.out;
}

BpfExitEntry Entry(uint32_t tid, uint32_t reason, uint64_t exits, std::initializer_list<std::pair<int, uint64_t>> hist,
                   uint64_t userspace = 0) {
  BpfExitEntry e;
  e.key = {100, tid, reason, kIsaSvm};
  e.stats.exits = exits;
  for (auto [b, n] : hist) {
    e.stats.hist[b] += n;
    e.stats.timed += n;
    e.stats.total_ns += n * (uint64_t{1} << b);
  }
  e.stats.userspace = userspace;
  return e;
}

VmNameFn TestNamer(int* calls) {
  return [calls](int32_t tid, int32_t) {
    ++*calls;
    ExitVmName n;
    n.domain = tid == 200 ? "db" : "web01";
    n.vmm = "qemu";
    n.vcpu = tid % 10;
    return n;
  };
}

TEST(BpfMetricsTracker, AddsWhatGrewAndExportsWithoutMadeUpFigures) {
  int calls = 0;
  BpfMetricsTracker tracker(TestNamer(&calls));
  Log2ExitMetrics m;
  tracker.Add({Entry(101, kSvmCpuid, 1000, {{10, 1000}}), Entry(102, kSvmHlt, 3, {{20, 2}})}, &m);
  tracker.Add({Entry(101, kSvmCpuid, 1500, {{10, 1400}, {12, 100}}, 2), Entry(102, kSvmHlt, 3, {{20, 2}})}, &m);
  EXPECT_EQ(calls, 2);  // each thread named once
  const Log2ReasonMetrics& cpuid = m.domains.at("web01").reasons.at("cpuid");
  EXPECT_EQ(cpuid.exits, 1500u);
  EXPECT_EQ(cpuid.timed, 1500u);
  EXPECT_EQ(cpuid.vmm_trips, 2u);
  EXPECT_EQ(cpuid.timed_ns, 1400u * 1024 + 100u * 4096);
  EXPECT_EQ(m.domains.at("web01").vcpu_exits.at(1), 1500u);
  EXPECT_EQ(m.domains.at("web01").reasons.at("hlt").exits, 3u);

  ExpositionOptions o{ExpositionFormat::kPrometheusText, 2, ""};
  std::string text = RenderLog2Exposition(m, nullptr, o);
  EXPECT_NE(text.find("exitscope_observer_info{mode=\"bpf\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("exitscope_exits_total{domain=\"web01\",reason=\"cpuid\"} 1500\n"), std::string::npos);
  EXPECT_NE(text.find("exitscope_vmm_trips_total{domain=\"web01\",reason=\"cpuid\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("exitscope_exit_seconds_total{domain=\"web01\",reason=\"cpuid\"} 0.0018432\n"),
            std::string::npos);
  EXPECT_EQ(text.find("stage="), std::string::npos);  // the counter cannot split kernel from VMM time
  EXPECT_EQ(text.find("exitscope_events_lost"), std::string::npos);
  EXPECT_EQ(text.find("exitscope_diagnostics"), std::string::npos);
  // Bucket 10 is [1024, 2048) ns: under le = 2047 ns, not under 1023 ns.
  EXPECT_NE(text.find("reason=\"cpuid\",le=\"1.023e-06\"} 0\n"), std::string::npos);
  EXPECT_NE(text.find("reason=\"cpuid\",le=\"2.047e-06\"} 1400\n"), std::string::npos);
  EXPECT_NE(text.find("reason=\"cpuid\",le=\"8.191e-06\"} 1500\n"), std::string::npos);
  EXPECT_NE(text.find("reason=\"cpuid\",le=\"+Inf\"} 1500\n"), std::string::npos);
  EXPECT_NE(text.find("reason=\"cpuid\",le=\"2.55e-07\"} 0\n"), std::string::npos);
  EXPECT_EQ(Promtool(text), "");
  std::string om = RenderLog2Exposition(m, nullptr, {ExpositionFormat::kOpenMetrics, 0, ""});
  EXPECT_TRUE(om.ends_with("# EOF\n"));
  EXPECT_EQ(om.find("exitscope_exit_duration_seconds"), std::string::npos);
}

TEST(BpfMetricsTracker, BoundsAreTwoToTheKMinusOneNanoseconds) {
  std::vector<uint64_t> b = Log2HistogramBoundsNs();
  ASSERT_EQ(b.size(), kLog2Buckets - 8);
  EXPECT_EQ(b.front(), 255u);
  EXPECT_EQ(b.back(), (uint64_t{1} << 29) - 1);
}

KvmVmCounters Vm(int pid, uint64_t exits, uint64_t halt_wait_ns, std::map<int, uint64_t> vcpu_exits,
                 std::string source = "stats-fd") {
  KvmVmCounters vm;
  vm.pid = pid;
  vm.vm_fd = 11;
  vm.source = std::move(source);
  vm.counters = {{"exits", exits}, {"halt_wait_ns", halt_wait_ns}, {"pages_4k", 512}};
  for (auto [i, n] : vcpu_exits) vm.vcpus[i] = {{"exits", n}};
  return vm;
}

TEST(KvmStatTracker, CountersGrowAcrossReadsAndAVmThatCloses) {
  int calls = 0;
  KvmStatTracker tracker(TestNamer(&calls));
  KvmStatMetrics m;
  tracker.Add({Vm(101, 100, 2000000000, {{0, 60}, {1, 40}})}, &m);
  tracker.Add({Vm(101, 250, 2500000000, {{0, 150}, {1, 100}})}, &m);
  tracker.Add({}, &m);                           // the VM closed: its series stay
  tracker.Add({Vm(101, 30, 0, {{0, 30}})}, &m);  // a new VM of the same name counts on
  const KvmStatDomain& d = m.domains.at("web01");
  EXPECT_EQ(d.counters.at("exits"), 280u);
  EXPECT_EQ(d.counters.at("halt_wait_ns"), 2500000000u);
  EXPECT_EQ(d.counters.count("pages_4k"), 0u);  // a gauge: not kept
  EXPECT_EQ(d.vcpus.at(0).at("exits"), 180u);
  EXPECT_EQ(d.vcpus.at(1).at("exits"), 100u);

  std::string text = RenderKvmStatExposition(m, nullptr, {ExpositionFormat::kPrometheusText, 5, ""});
  EXPECT_NE(text.find("exitscope_observer_info{mode=\"stats\"} 1\n"), std::string::npos);
  EXPECT_NE(text.find("exitscope_kvm_exits_total{domain=\"web01\"} 280\n"), std::string::npos);
  EXPECT_NE(text.find("exitscope_kvm_halt_wait_seconds_total{domain=\"web01\"} 2.5\n"), std::string::npos);
  EXPECT_NE(text.find("exitscope_kvm_vcpu_exits_total{domain=\"web01\",vcpu=\"0\"} 180\n"), std::string::npos);
  EXPECT_NE(text.find("exitscope_kvm_stats_source_info{domain=\"web01\",source=\"stats-fd\"} 1\n"), std::string::npos);
  EXPECT_EQ(text.find("exitscope_exits_total"), std::string::npos);  // no reasons in KVM's counters
  EXPECT_EQ(text.find("exitscope_exit_duration"), std::string::npos);
  EXPECT_EQ(Promtool(text), "");
}

TEST(KvmStatTracker, DebugfsHasNoVcpuSeries) {
  int calls = 0;
  KvmStatTracker tracker(TestNamer(&calls));
  KvmStatMetrics m;
  tracker.Add({Vm(101, 100, 0, {}, "debugfs")}, &m);
  std::string text = RenderKvmStatExposition(m, nullptr, {ExpositionFormat::kOpenMetrics, 0, ""});
  EXPECT_NE(text.find("source=\"debugfs\""), std::string::npos);
  EXPECT_EQ(text.find("exitscope_kvm_vcpu_exits_total{"), std::string::npos);
  EXPECT_NE(text.find("# UNIT exitscope_kvm_halt_wait_seconds seconds\n"), std::string::npos);
}

}  // namespace
}  // namespace exitscope
