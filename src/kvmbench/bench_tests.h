// The table of `exitscope bench` tests: name, what each measures, which exit it is meant to cause, the
// guest entry and exiting instruction (symbols of guest_code.S), and what the host must support.
// In: the CPU vendor (vmcall vs vmmcall). Out: test descriptors. Assumption: the guest code is loaded
// at KVMBENCH_CODE_GPA and identity-mapped, so a symbol's offset in the blob gives its guest RIP.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace exitscope::kvmbench {

enum class CpuVendor { kIntel, kAmd, kOther };

// Which VM a test runs in. In-kernel irqchip (KVM_CREATE_IRQCHIP + KVM_CREATE_PIT2) is needed for the
// TSC_DEADLINE MSR and the in-kernel PIT port; HLT needs a VM without it so that KVM_EXIT_HLT reaches
// our VMM (with an in-kernel LAPIC and IF=0 the vCPU would sleep forever).
enum class VmKind { kIrqchip, kPlain };

struct BenchTest {
  std::string_view name;
  std::string_view description;
  std::string_view intended_exit;  // human-readable: "cpuid", "io, userspace KVM_EXIT_IO", ...
  const uint8_t* entry_intel;      // guest entry (kvmbench_test_*) on Intel/other
  const uint8_t* entry_amd;        // on AMD/Hygon (differs only for vmcall)
  const uint8_t* exit_insn_intel;  // the exiting instruction (kvmbench_rip_*)
  const uint8_t* exit_insn_amd;
  VmKind vm;
  bool needs_user_msr;   // KVM_CAP_X86_USER_SPACE_MSR + KVM_CAP_X86_MSR_FILTER
  bool needs_ioeventfd;  // KVM_CAP_IOEVENTFD
};

std::span<const BenchTest> BenchTests();
const BenchTest* FindBenchTest(std::string_view name);

// The guest-physical (= guest-virtual) address of a symbol inside the guest blob.
uint64_t GuestAddress(const uint8_t* symbol);
std::span<const uint8_t> GuestCode();
uint64_t GuestMainAddress();

inline const uint8_t* Entry(const BenchTest& t, CpuVendor v) {
  return v == CpuVendor::kAmd ? t.entry_amd : t.entry_intel;
}
inline const uint8_t* ExitInsn(const BenchTest& t, CpuVendor v) {
  return v == CpuVendor::kAmd ? t.exit_insn_amd : t.exit_insn_intel;
}

}  // namespace exitscope::kvmbench
