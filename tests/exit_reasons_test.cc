#include "decode/exit_reasons.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "test_util.h"

namespace exitscope {
namespace {

using testing::ReadFile;

std::string ReadGz(const std::string& path) { return testing::ReadGzip(path); }

const std::string kSvm61 = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1";

// Every { code, "name" } pair of the 6.1 kernel's kvm_exit print fmt (both ISAs) must print the same.
TEST(ExitReasonsTest, MatchesKernel61PrintFmtTables) {
  std::string fmt = ReadFile(kSvm61 + "/formats/kvm_exit.format");
  ASSERT_FALSE(fmt.empty());
  size_t split = fmt.find(": __print_symbolic(REC->exit_reason,");
  ASSERT_NE(split, std::string::npos);
  std::regex pair(R"(\{ (-?0x[0-9a-f]+|-?\d+)(?: \+ (\d+))?, \"([^\"]+)\" \})");
  int vmx = 0, svm = 0;
  for (int part = 0; part < 2; ++part) {
    std::string text = part == 0 ? fmt.substr(0, split) : fmt.substr(split);
    Isa isa = part == 0 ? Isa::kVmx : Isa::kSvm;
    for (std::sregex_iterator it(text.begin(), text.end(), pair), end; it != end; ++it) {
      std::string num = (*it)[1];
      if ((*it)[3] == "FAILED_VMENTRY") continue;  // the flags table
      int64_t code = std::stoll(num, nullptr, 0);
      if ((*it)[2].matched) code += std::stoll((*it)[2]);
      uint32_t c = static_cast<uint32_t>(code);
      EXPECT_EQ(ExitReasonName(isa, c), (*it)[3]) << IsaName(isa) << " " << num;
      EXPECT_EQ(ExitReasonFromName(isa, (*it)[3].str()), c);
      (part == 0 ? vmx : svm)++;
    }
  }
  EXPECT_EQ(vmx, 62);  // the 6.1 kernel names 62 VMX reasons (newer ones: 76, 77, 84, 85)
  EXPECT_GT(svm, 100);
}

TEST(ExitReasonsTest, VmxFlagsUnknownAndNewerReasons) {
  EXPECT_EQ(ExitReasonName(Isa::kVmx, 48), "EPT_VIOLATION");
  EXPECT_EQ(ExitReasonName(Isa::kVmx, 0x80000021), "INVALID_STATE FAILED_VMENTRY");
  EXPECT_EQ(ExitReasonFromName(Isa::kVmx, "INVALID_STATE FAILED_VMENTRY"), 0x80000021u);
  EXPECT_EQ(ExitReasonName(Isa::kVmx, 85), "MSR_WRITE_IMM");
  EXPECT_EQ(ExitReasonName(Isa::kVmx, 77), "TDCALL");
  EXPECT_EQ(ExitReasonName(Isa::kVmx, 99), "UNKNOWN(0x63)");
  EXPECT_EQ(ExitReasonFromName(Isa::kVmx, "UNKNOWN(0x63)"), 99u);
  EXPECT_EQ(ExitReasonName(Isa::kSvm, 0x999), "UNKNOWN(0x999)");
  EXPECT_EQ(ExitReasonName(Isa::kSvm, 0xffffffff), "invalid_guest_state");
  EXPECT_EQ(ExitReasonName(Isa::kUnknown, 3), "UNKNOWN(0x3)");
}

TEST(ExitReasonsTest, AcceptsAnyCaseAndLibtraceeventSpellings) {
  EXPECT_EQ(ExitReasonFromName(Isa::kVmx, "ept_violation"), 48u);
  EXPECT_EQ(ExitReasonFromName(Isa::kSvm, "NPF"), 0x400u);
  EXPECT_EQ(ExitReasonFromName(Isa::kSvm, "EXIT_NPF"), 0x400u);
  EXPECT_EQ(ExitReasonFromName(Isa::kSvm, "EXIT_IOIO"), 0x7bu);
  EXPECT_EQ(ExitReasonFromName(Isa::kSvm, "EXIT_VMMCALL"), 0x81u);
  EXPECT_EQ(ExitReasonFromName(Isa::kSvm, "EXIT_INTR"), 0x60u);
  EXPECT_EQ(ExitReasonFromName(Isa::kSvm, "EXIT_EXCP_PF"), 0x4eu);
  EXPECT_EQ(ExitReasonFromName(Isa::kSvm, "EXIT_ERR"), 0xffffffffu);
  EXPECT_EQ(ExitReasonFromName(Isa::kSvm, "PF excp"), 0x4eu);
  EXPECT_EQ(ExitReasonFromName(Isa::kVmx, "EXIT_REASON_HLT"), 12u);
  EXPECT_EQ(ExitReasonFromName(Isa::kUnknown, "EXIT_NPF"), 0x400u);
  EXPECT_FALSE(ExitReasonFromName(Isa::kVmx, "no_such_reason"));
  EXPECT_EQ(IsaFromReasonName("EPT_VIOLATION"), Isa::kVmx);
  EXPECT_EQ(IsaFromReasonName("HLT"), Isa::kVmx);
  EXPECT_EQ(IsaFromReasonName("hlt"), Isa::kSvm);
  EXPECT_EQ(IsaFromReasonName("EXIT_HLT"), Isa::kSvm);
  EXPECT_EQ(IsaFromReasonName("npf"), Isa::kSvm);
}

// dual-5000's trace-cmd report (libtraceevent plugin names) and kernel text (TP_printk names) hold
// the same kvm_exit events in the same order: each plugin name must resolve to the kernel's code.
TEST(ExitReasonsTest, PluginAndKernelSpellingsOfTheSameExitsAgree) {
  std::string plugin = ReadGz(kSvm61 + "/dual-5000/trace-cmd-report.txt.gz");
  std::string kernel = ReadGz(kSvm61 + "/dual-5000/kernel-trace.txt.gz");
  ASSERT_FALSE(plugin.empty());
  ASSERT_FALSE(kernel.empty());
  auto reasons = [](const std::string& text) {
    std::vector<std::string> out;
    size_t pos = 0;
    while ((pos = text.find("kvm_exit:", pos)) != std::string::npos) {
      size_t r = text.find("reason ", pos);
      size_t end = text.find(" rip", r);
      out.push_back(text.substr(r + 7, end - r - 7));
      pos = end;
    }
    return out;
  };
  auto p = reasons(plugin), k = reasons(kernel);
  ASSERT_EQ(p.size(), 65368u);
  ASSERT_EQ(p.size(), k.size());
  for (size_t i = 0; i < p.size(); ++i) {
    auto pc = ExitReasonFromName(Isa::kSvm, p[i]);
    auto kc = ExitReasonFromName(Isa::kSvm, k[i]);
    ASSERT_TRUE(pc && kc) << p[i] << " / " << k[i];
    ASSERT_EQ(*pc, *kc) << p[i] << " / " << k[i];
    ASSERT_EQ(ExitReasonName(Isa::kSvm, *kc), k[i]);
  }
}

}  // namespace
}  // namespace exitscope
