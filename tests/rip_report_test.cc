// `report --by rip` / `--folded` on real traces: counts per (reason, RIP) must add up to the reason
// totals `report` prints, folded lines carry perf kvm stat's counts for the kvmprobe loop, and guest
// symbols given as a KASLR-shifted System.map are slid back by exit-site inference end to end.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace {

std::string Report(const std::string& args, int* rc = nullptr) {
  std::string cmd = std::string(EXITSCOPE_BINARY) + " report " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  size_t n;
  while (p && (n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int st = p ? pclose(p) : -1;
  if (rc) *rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return out;
}

std::string Trace(const std::string& rel) { return std::string(EXITSCOPE_SHARED_DIR) + "/traces/" + rel; }

TEST(RipReport, Hip24RipsAddUpToReasonTotals) {
  std::string t = Trace("hip24-vmx/host-2vcpu-6.5.dat");
  ASSERT_TRUE(std::filesystem::exists(t)) << t << ": ../shared/traces is part of every checkout";
  auto j = nlohmann::json::parse(Report("--by rip --top 1000 --json " + t), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  // Timed exits: 11 pairs resume the guest elsewhere (pair.resume_mismatch), 6 HLT and 2 MSR_WRITE
  // among them, and are not timed.
  EXPECT_EQ(j["exits"], 22743);
  std::map<std::string, uint64_t> want = {{"APIC_WRITE", 8251}, {"HLT", 7568}, {"MSR_WRITE", 4724}};
  for (const auto& r : j["reasons"]) {
    uint64_t sum = 0;
    for (const auto& rip : r["rips"]) sum += rip["exits"].get<uint64_t>();
    EXPECT_EQ(sum, r["exits"].get<uint64_t>()) << r["reason"];
    if (auto w = want.find(r["reason"]); w != want.end()) {
      EXPECT_EQ(r["exits"].get<uint64_t>(), w->second) << r["reason"];
    }
  }
  // Every APIC_WRITE (TMICT) comes from one guest instruction.
  for (const auto& r : j["reasons"]) {
    if (r["reason"] == "APIC_WRITE") {
      ASSERT_EQ(r["rips"].size(), 1u);
      EXPECT_EQ(r["rips"][0]["rip"], "0xffffffff960db918");
      EXPECT_EQ(r["rips"][0]["space"], "kernel");
    }
  }
}

TEST(RipReport, KvmprobeFoldedStacksMatchPerfKvmStatCounts) {
  std::string t = Trace("nested-svm-6.1/kvmprobe-200.trace.dat");
  ASSERT_TRUE(std::filesystem::exists(t)) << t << ": ../shared/traces is part of every checkout";
  std::string folded = Report("--folded - " + t);
  // perf kvm stat (README): cpuid 200, hlt 199, hypercall 200, read_dr7 201 (one before the loop).
  EXPECT_NE(folded.find("kvmprobe-499;vcpu0;cpuid;[user] 0x1012 200\n"), std::string::npos) << folded;
  EXPECT_NE(folded.find("kvmprobe-499;vcpu0;hlt;[user] 0x105b 199\n"), std::string::npos);
  EXPECT_NE(folded.find("kvmprobe-499;vcpu0;hypercall;[user] 0x104e 200\n"), std::string::npos);
}

// Issue 13: the folded stacks named each vCPU thread as its own VM ("CPU 0/KVM-60250"); they must
// group threads as --by vm does: the GUEST option puts tids 60250 and 60251 in one VM.
TEST(RipReport, FoldedVmFramesAgreeWithReportByVm) {
  std::string t = Trace("hip24-vmx/host-2vcpu-6.5.dat");
  std::string folded = Report("--folded - " + t);
  std::set<std::string> vms;
  std::map<std::string, std::set<std::string>> vcpus_by_vm;
  std::istringstream lines(folded);
  for (std::string line; std::getline(lines, line);) {
    auto a = line.find(';'), b = line.find(';', a + 1);
    ASSERT_NE(b, std::string::npos) << line;
    vms.insert(line.substr(0, a));
    vcpus_by_vm[line.substr(0, a)].insert(line.substr(a + 1, b - a - 1));
  }
  auto j = nlohmann::json::parse(Report("--by vm --json " + t), nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(vms.size(), j["groups"].size()) << folded.substr(0, 2000);
  bool two_vcpu_vm = false;
  for (const auto& [vm, vcpus] : vcpus_by_vm) two_vcpu_vm |= vcpus == std::set<std::string>{"vcpu0", "vcpu1"};
  EXPECT_TRUE(two_vcpu_vm) << "the GUEST option's VM should carry vcpu0 and vcpu1";
}

// A System.map at link addresses whose HLT and MSR-write sites sit where the hip24 guest's exits
// land after a 0x16000000 slide; --by rip must infer that slide and print func+off.
TEST(RipReport, ShiftedSystemMapIsSlidBackByExitSites) {
  std::string t = Trace("hip24-vmx/host-2vcpu-6.5.dat");
  ASSERT_TRUE(std::filesystem::exists(t)) << t << ": ../shared/traces is part of every checkout";
  std::string map = (std::filesystem::temp_directory_path() / ("exitscope-map-" + std::to_string(getpid()))).string();
  {
    std::ofstream m(map);
    m << "ffffffff81000000 T _text\n"
      << "ffffffff81032500 T default_idle\n"  // HLT at 0xffffffff9703252f - 0x16000000
      << "ffffffff81032580 t after_idle\n"
      << "ffffffff800db900 T native_write_msr\n"  // not at the slide: must not vote for it
      << "ffffffff800db980 t other\n";
  }
  int rc = 0;
  auto j = nlohmann::json::parse(Report("--by rip --json --reason HLT --guest-system-map " + map + " " + t, &rc),
                                 nullptr, false);
  std::filesystem::remove(map);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["kaslr_slide"], 0x16000000);
  bool found = false;
  for (const auto& rip : j["reasons"][0]["rips"]) {
    if (rip["rip"] == "0xffffffff9703252f") {
      EXPECT_EQ(rip["symbol"], "default_idle+0x2f");
      found = true;
    }
  }
  EXPECT_TRUE(found) << j.dump(1);
  EXPECT_NE(j["symbols"].get<std::string>().find("exit-sites"), std::string::npos) << j["symbols"];
}

}  // namespace
