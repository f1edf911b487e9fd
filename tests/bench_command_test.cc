// `exitscope bench` behaviour that needs no KVM: the test list, usage and device errors, baselines.
// Its real runs are tested on a real KVM host by the kvmhost CTest label (tools/kvmhost/tests).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "kvmbench/bench_tests.h"

namespace exitscope {
namespace {

struct Output {
  int code = -1;
  std::string text;  // stdout and stderr
};

Output RunBench(const std::string& args) {
  std::string cmd = std::string(EXITSCOPE_BINARY) + " bench " + args + " 2>&1";
  Output out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.text.append(buf.data(), n);
  int status = pclose(p);
  out.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return out;
}

TEST(BenchCommand, ListsEveryTestWithItsIntendedExit) {
  Output out = RunBench("--list");
  ASSERT_EQ(out.code, 0) << out.text;
  for (const auto& t : kvmbench::BenchTests()) {
    EXPECT_NE(out.text.find(std::string(t.name) + " "), std::string::npos) << t.name;
    EXPECT_NE(out.text.find("intended exit: " + std::string(t.intended_exit)), std::string::npos);
  }
}

TEST(BenchCommand, MissingDeviceIsUnavailableWithHint) {
  Output out = RunBench("--device /nonexistent/kvm");
  EXPECT_EQ(out.code, 69) << out.text;
  EXPECT_EQ(out.text.rfind("error: cannot open /nonexistent/kvm", 0), 0u) << out.text;
  EXPECT_NE(out.text.find("[bench.no-kvm]\nhint: "), std::string::npos) << out.text;
}

TEST(BenchCommand, UnknownTestIsUsageError) {
  Output out = RunBench("--device /nonexistent/kvm --test no_such_test");
  EXPECT_EQ(out.code, 64) << out.text;
  EXPECT_NE(out.text.find("[bench.unknown-test]"), std::string::npos) << out.text;
}

TEST(BenchCommand, BaselineMustBeBenchJson) {
  std::string path = testing::TempDir() + "/not-a-baseline.json";
  std::ofstream(path) << "{\"schema\": \"something-else\"}";
  Output out = RunBench("--compare " + path);
  EXPECT_EQ(out.code, 65) << out.text;
  EXPECT_NE(out.text.find("[bench.baseline-format]"), std::string::npos) << out.text;
}

TEST(BenchTests, ExitRipsAreDistinctAndInsideTheGuest) {
  auto code = kvmbench::GuestCode();
  const uint64_t begin = kvmbench::GuestAddress(code.data());
  std::set<uint64_t> seen;
  for (const auto& t : kvmbench::BenchTests()) {
    for (auto v : {kvmbench::CpuVendor::kIntel, kvmbench::CpuVendor::kAmd}) {
      uint64_t rip = kvmbench::GuestAddress(kvmbench::ExitInsn(t, v));
      EXPECT_GE(rip, begin) << t.name;
      EXPECT_LT(rip, begin + code.size()) << t.name;
      EXPECT_GT(rip, kvmbench::GuestAddress(kvmbench::Entry(t, v))) << t.name;
    }
    EXPECT_TRUE(seen.insert(kvmbench::GuestAddress(kvmbench::ExitInsn(t, kvmbench::CpuVendor::kAmd))).second) << t.name;
  }
}

}  // namespace
}  // namespace exitscope
