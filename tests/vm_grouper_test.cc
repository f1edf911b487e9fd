// VM grouping of vCPU threads when the trace does (perf.data) or does not (trace.dat, text) record
// which process a thread belongs to.
#include "analysis/vm_grouper.h"

#include <gtest/gtest.h>

namespace exitscope {
namespace {

TEST(VmGrouperTest, ProcessKnownWins) {
  TraceMeta meta;
  meta.tgid_by_tid = {{101, 100}, {102, 100}};
  meta.comm_by_tid = {{100, "qemu-system-x86"}, {101, "CPU 0/KVM"}, {102, "CPU 1/KVM"}};
  VmGrouper g(meta);
  EXPECT_EQ(g.VmId(101), 100);
  EXPECT_EQ(g.VmId(102), 100);
  EXPECT_EQ(g.Label(100, {101, 102}), "qemu-system-x86 (pid 100)");
}

TEST(VmGrouperTest, GuestOptionNamesTheVmWithItsVcpuMap) {
  TraceMeta meta;
  meta.guests.push_back(GuestInfo{"Salamander4", 1, {{0, 60250}, {1, 60251}}, "", ""});
  meta.guests.push_back(GuestInfo{"", 2, {{0, 483882}}, "", ""});
  VmGrouper g(meta);
  EXPECT_EQ(g.VmId(60251), 60250);
  EXPECT_EQ(g.GuestVcpu(60251), 1);
  EXPECT_EQ(g.Label(60250, {60250, 60251}),
            "Salamander4 (trace-cmd GUEST option: vCPU 0 → tid 60250, vCPU 1 → tid 60251)");
  EXPECT_EQ(g.Label(483882, {483882}), "unnamed guest (trace-cmd GUEST option, no name recorded: vCPU 0 → tid 483882)");
}

TEST(VmGrouperTest, QemuVcpuThreadsWithConsecutiveTidsAreOneVm) {
  TraceMeta meta;
  meta.comm_by_tid = {
      {453724, "CPU 0/KVM"}, {453725, "CPU 1/KVM"}, {500, "CPU 0/KVM"}, {52679, "qemu-system-x86"}, {9, "CPU x/KVM"}};
  VmGrouper g(meta);
  EXPECT_EQ(g.VmId(453724), 453724);
  EXPECT_EQ(g.VmId(453725), 453724);
  EXPECT_EQ(g.VmId(500), 500);      // another VM's vCPU 0
  EXPECT_EQ(g.VmId(52679), 52679);  // not a vCPU thread name: on its own
  EXPECT_EQ(g.VmId(9), 9);
  EXPECT_EQ(g.Label(453724, {453724, 453725}),
            "QEMU (process not recorded; vCPU threads grouped by name and consecutive tids: "
            "tid 453724 CPU 0/KVM, tid 453725 CPU 1/KVM)");
  EXPECT_EQ(g.Label(52679, {52679}), "qemu-system-x86 (tid 52679, process not recorded)");
  EXPECT_EQ(g.Label(77, {77}), "tid 77, process not recorded");
}

// The flame-graph frames (report --folded) name VMs through the same grouping: one frame per VM, not
// per vCPU thread (they showed "CPU 0/KVM-453724" and "CPU 1/KVM-453725" as two VMs), and the vCPU
// index comes from the thread name when the kernel did not record vcpu_id.
TEST(VmGrouperTest, FrameLabelsGroupLikeVmId) {
  TraceMeta meta;
  meta.comm_by_tid = {{453724, "CPU 0/KVM"}, {453725, "CPU 1/KVM"}, {52679, "qemu-system-x86"}};
  VmGrouper g(meta);
  EXPECT_EQ(g.FrameLabel(453724), "qemu-453724");
  EXPECT_EQ(g.FrameLabel(453725), "qemu-453724");
  EXPECT_EQ(g.FrameLabel(52679), "qemu-system-x86-52679");
  EXPECT_EQ(g.FrameLabel(77), "tid-77");
  EXPECT_EQ(g.VcpuIndex(453725, -1), 1);
  EXPECT_EQ(g.VcpuIndex(453725, 3), 3);  // the kernel's vcpu_id wins
  EXPECT_FALSE(g.VcpuIndex(52679, -1).has_value());
  meta.tgid_by_tid = {{453724, 453700}, {453725, 453700}};
  meta.comm_by_tid[453700] = "qemu-system-x86";
  VmGrouper with_process(meta);
  EXPECT_EQ(with_process.FrameLabel(453725), "qemu-system-x86-453700");
}

}  // namespace
}  // namespace exitscope
