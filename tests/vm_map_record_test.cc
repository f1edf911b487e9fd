// `exitscope record`'s VM map (issue 15): the GUEST options it writes name each VMM process as the
// live host did (ProcVmDirectory), trace-cmd still reads the file as before, and offline reports
// (report --by vm, folded frames, report --openmetrics) name the VM from it. Real pages: the
// kvmprobe-200 recording of a nested SVM host (one vCPU thread, tid 499, kvm_entry vcpu 0); the
// VMM's /proc entries are text fixtures in a temporary directory.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "analysis/vm_grouper.h"
#include "live/vm_map_collector.h"
#include "pipeline/input_detector.h"
#include "sinks/tracedat_writer.h"
#include "sources/tracedat/guest_option.h"
#include "sources/tracedat/tracedat_format.h"
#include "test_util.h"
#include "tracedat_extract.h"

namespace exitscope {
namespace {

namespace fs = std::filesystem;
const std::string kTrace = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat";
constexpr int32_t kVcpuTid = 499, kVmmPid = 490;
const std::string kUuid = "6a2c7f0e-4f0b-4bb1-9b1e-5d1e0c2a7f11";

std::span<const uint8_t> Bytes(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

void Put(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// /proc as a QEMU started by libvirt shows it: the VMM (pid 490) and its vCPU thread 499.
fs::path FakeProc() {
  fs::path root = fs::temp_directory_path() / ("exitscope-proc-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto stat = [](int id, const std::string& comm, int start) {
    std::string s = std::to_string(id) + " (" + comm + ") S";
    for (int f = 4; f <= 21; ++f) s += " 0";
    return s + " " + std::to_string(start) + " 0 0\n";
  };
  Put(root / "490/stat", stat(kVmmPid, "qemu-system-x86", 777));
  Put(root / "490/comm", "qemu-system-x86\n");
  std::string cmdline;
  for (std::string a :
       {"/usr/bin/qemu-system-x86_64", "-name", "guest=web01,debug-threads=on", "-uuid", kUuid.c_str(), "-smp", "1"})
    cmdline += a + '\0';
  Put(root / "490/cmdline", cmdline);
  Put(root / "499/stat", stat(kVcpuTid, "CPU 0/KVM", 780));
  Put(root / "499/comm", "CPU 0/KVM\n");
  Put(root / "499/status", "Name:\tCPU 0/KVM\nTgid:\t490\nPid:\t499\n");
  fs::create_directories(root / "490/task/499");
  fs::create_directories(root / "debugfs-kvm/490-12/vcpu0");  // debugfs kvm/<pid>-<vm fd>
  return root;
}

TEST(VmMapRecordTest, GuestOptionKeepsTraceCmdFieldsAndOurs) {
  GuestInfo g{"web01", 0, {{0, 499}, {2, 501}}, "", ""};
  RecordedVm vm{kVmmPid, "qemu-system-x86", "qemu", kUuid, {{499, 0}, {501, 2}, {503, -1}}};
  std::string bytes = EncodeGuestOption(g, &vm);
  // trace-cmd's fields first: name, trace id, 3 vCPUs (1 is a gap, host pid 0), then ours.
  ASSERT_EQ(bytes.substr(0, 6), std::string("web01\0", 6));
  uint32_t count = 0;
  std::memcpy(&count, bytes.data() + 6 + 8, 4);
  EXPECT_EQ(count, 3u);
  GuestInfo back;
  RecordedVm back_vm;
  ASSERT_TRUE(DecodeGuestOption(Bytes(bytes), &back, &back_vm));
  EXPECT_EQ(back.name, "web01");
  EXPECT_EQ(back.vcpu_to_host_tid, (std::map<int32_t, int32_t>{{0, 499}, {2, 501}}));
  EXPECT_EQ(back_vm.pid, kVmmPid);
  EXPECT_EQ(back_vm.comm, "qemu-system-x86");
  EXPECT_EQ(back_vm.vmm, "qemu");
  EXPECT_EQ(back_vm.uuid, kUuid);
  EXPECT_EQ(back_vm.vcpu_by_tid, vm.vcpu_by_tid);
  // trace-cmd's own option (no part of ours) reads as before: no process.
  GuestInfo plain{"Salamander4", 7, {{0, 60250}, {1, 60251}}, "", ""};
  GuestInfo p;
  ASSERT_TRUE(DecodeGuestOption(Bytes(EncodeGuestOption(plain)), &p, &back_vm));
  EXPECT_EQ(back_vm.pid, 0);
  EXPECT_EQ(p.vcpu_to_host_tid, plain.vcpu_to_host_tid);
  // Damaged: cut inside the pairs.
  EXPECT_FALSE(DecodeGuestOption(Bytes(bytes.substr(0, 20)), &p, &back_vm));
}

class VmMapRecordFileTest : public ::testing::Test {
 protected:
  void TearDown() override {
    fs::remove(out_);
    fs::remove_all(proc_);
  }
  std::string out_ = (fs::temp_directory_path() / ("exitscope-vmmap-" + std::to_string(::getpid()) + ".dat")).string();
  fs::path proc_;
};

TEST_F(VmMapRecordFileTest, RecordedPagesNameTheVmOfflineAndTraceCmdStillReads) {
  ASSERT_TRUE(fs::exists(kTrace)) << kTrace;
  testing::Extracted x = testing::Extract(testing::ReadFile(kTrace));
  proc_ = FakeProc();
  std::vector<EnabledEvent> events;
  for (const auto& sys : x.meta.systems)
    for (const auto& f : sys.formats) events.push_back({sys.name, "", f});
  VmMapCollector collector(x.meta.header_page, events, x.meta.page_size, proc_.string(),
                           (proc_ / "debugfs-kvm").string());
  // record reads partial pages only at the end, when a short-lived VMM may be gone: the scan while
  // it runs must have resolved its threads already.
  collector.Scan();
  fs::remove_all(proc_ / "490");
  fs::remove_all(proc_ / "499");
  auto w = TraceDatWriter::Create(out_, x.meta);
  ASSERT_TRUE(w.ok()) << w.error().message;
  for (uint32_t cpu = 0; cpu < x.cpu_pages.size(); ++cpu) {
    collector.AddPages(Bytes(x.cpu_pages[cpu]));
    ASSERT_TRUE((*w)->AddPages(cpu, Bytes(x.cpu_pages[cpu])).ok());
  }
  std::vector<VmMapCollector::Vm> vms = collector.Vms();
  ASSERT_EQ(vms.size(), 1u);
  EXPECT_EQ(vms[0].guest.name, "web01");
  EXPECT_EQ(vms[0].guest.vcpu_to_host_tid, (std::map<int32_t, int32_t>{{0, kVcpuTid}}));
  EXPECT_EQ(vms[0].recorded.pid, kVmmPid);
  EXPECT_EQ(vms[0].recorded.uuid, kUuid);
  EXPECT_EQ(vms[0].recorded.vcpu_by_tid, (std::map<int32_t, int32_t>{{kVcpuTid, 0}}));
  for (const auto& vm : vms) (*w)->add_option(kOptGuest, EncodeGuestOption(vm.guest, &vm.recorded));
  ASSERT_TRUE((*w)->Finish(x.cpustats).ok());

  // trace-cmd prints the same events as for the original, and sees the guest in the options.
  std::string want = testing::ReadCommand("trace-cmd report -i '" + kTrace + "' 2>&1 | tail -n +2");
  std::string got = testing::ReadCommand("trace-cmd report -i '" + out_ + "' 2>&1 | tail -n +2");
  ASSERT_GT(want.size(), 100000u);
  EXPECT_TRUE(got == want) << got.substr(0, 400);
  std::string dump = testing::ReadCommand("trace-cmd dump --options -i '" + out_ + "' 2>&1");
  EXPECT_NE(dump.find("web01 [Guest name]"), std::string::npos) << dump;
  EXPECT_NE(dump.find("0 499 [guest cpu, host pid]"), std::string::npos) << dump;

  // Our reader: the VM by its name, pid, VMM and uuid, as `top` labels it on the live host.
  auto src = OpenKvmEventSource(out_);
  ASSERT_TRUE(src.ok());
  const TraceMeta& meta = (*src)->meta();
  ASSERT_EQ(meta.guests.size(), 1u);
  EXPECT_EQ(meta.tgid_by_tid.at(kVcpuTid), kVmmPid);
  VmGrouper vms_of(meta);
  EXPECT_EQ(vms_of.VmId(kVcpuTid), kVmmPid);
  EXPECT_EQ(vms_of.Label(kVmmPid, {kVcpuTid}), "web01 (pid 490, qemu-system-x86; vCPU 0 → tid 499)");
  EXPECT_EQ(vms_of.FrameLabel(kVcpuTid), "web01");
  EXPECT_EQ(vms_of.VcpuIndex(kVcpuTid, -1), 0);
  ASSERT_NE(vms_of.Guest(kVcpuTid), nullptr);
  EXPECT_EQ(vms_of.Guest(kVcpuTid)->uuid, kUuid);
  EXPECT_EQ(vms_of.Guest(kVcpuTid)->vmm, "qemu");

  // The CLI: report --by vm and report --openmetrics name the VM as serve does live.
  std::string bin = EXITSCOPE_BINARY;
  std::string by_vm = testing::ReadCommand(bin + " report --by vm '" + out_ + "' 2>&1");
  EXPECT_NE(by_vm.find("web01 (pid 490, qemu"), std::string::npos) << by_vm.substr(0, 1500);
  std::string om = testing::ReadCommand(bin + " report --openmetrics '" + out_ + "' 2>&1");
  size_t info = om.find("exitscope_vm_info{domain=\"web01\"");
  ASSERT_NE(info, std::string::npos) << om.substr(0, 3000);
  EXPECT_NE(om.substr(info, om.find('\n', info) - info).find("vmm=\"qemu\""), std::string::npos)
      << om.substr(info, 200);
  // The uuid the live host's command line gave, as serve labels vm_info live.
  EXPECT_NE(om.substr(info, om.find('\n', info) - info).find("uuid=\"" + kUuid + "\""), std::string::npos)
      << om.substr(info, 200);
  EXPECT_NE(om.find("exitscope_exits_total{domain=\"web01\","), std::string::npos);
}

}  // namespace
}  // namespace exitscope
