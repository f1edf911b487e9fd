// VM names on a live host from the VMMs' command lines (tests/data/proc: QEMU under libvirt and by
// hand, Firecracker under its jailer, cloud-hypervisor under Kata and by hand, crosvm), vCPU indexes
// from thread names, and the (pid, start time) cache that a reused pid must not fool.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "analysis/vm_grouper.h"

namespace exitscope {
namespace {

namespace fs = std::filesystem;

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// tests/data/proc copied to a temp dir with each cmdline.txt (one argument a line) written
// NUL-separated as the kernel shows it.
class FakeProc {
 public:
  FakeProc() {
    root_ = fs::temp_directory_path() / ("exitscope-proc-" + std::to_string(::getpid()) + "-" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::copy(fs::path(EXITSCOPE_TESTDATA_DIR) / "proc", root_, fs::copy_options::recursive);
    for (const auto& e : fs::recursive_directory_iterator(root_)) {
      if (e.path().filename() != "cmdline.txt") continue;
      std::string text = ReadAll(e.path());
      for (char& c : text) c = c == '\n' ? '\0' : c;
      std::ofstream(e.path().parent_path() / "cmdline", std::ios::binary) << text;
    }
  }
  ~FakeProc() { fs::remove_all(root_); }
  std::string root() const { return root_.string(); }
  std::string Cmdline(int pid) const { return ReadAll(root_ / std::to_string(pid) / "cmdline"); }
  // Rewrites entry `id`'s starttime (proc(5) field 22), as when the pid is reused.
  void SetStart(int id, uint64_t start) {
    fs::path p = root_ / std::to_string(id) / "stat";
    std::string s = ReadAll(p);
    size_t close = s.rfind(')');
    std::istringstream in(s.substr(close + 2));
    std::vector<std::string> f;
    for (std::string w; in >> w;) f.push_back(w);
    f[22 - 3] = std::to_string(start);
    std::string out = s.substr(0, close + 2);
    for (const auto& w : f) out += w + " ";
    std::ofstream(p) << out << "\n";
  }
  void Remove(int id) { fs::remove_all(root_ / std::to_string(id)); }
  void Write(int id, const std::string& file, const std::string& text) {
    std::ofstream(root_ / std::to_string(id) / file, std::ios::binary) << text;
  }

 private:
  fs::path root_;
};

TEST(VmIdentity, LibvirtQemuNamesTheGuestAndItsUuid) {
  FakeProc proc;
  VmmIdentity id = IdentifyVmm(proc.Cmdline(4242), "qemu-system-x86");
  EXPECT_EQ(id.vmm, "qemu");
  EXPECT_EQ(id.name, "web01");
  EXPECT_EQ(id.uuid, "4450a55c-1669-da0e-d0bd-3ab45fef0398");
}

TEST(VmIdentity, QemuPlainNameWithEscapedComma) {
  FakeProc proc;
  VmmIdentity id = IdentifyVmm(proc.Cmdline(5100), "qemu-system-x86");
  EXPECT_EQ(id.vmm, "qemu");
  EXPECT_EQ(id.name, "db,primary");  // ",," is a literal comma; process= is another key
  EXPECT_EQ(id.uuid, "");
}

TEST(VmIdentity, QemuNameRules) {
  auto name = [](std::string value) {
    std::string cmd = std::string("qemu-system-x86_64\0-name\0", 25) + value;
    return IdentifyVmm(cmd, "").name;
  };
  EXPECT_EQ(name("guest=a,,b,debug-threads=on"), "a,b");
  EXPECT_EQ(name("plain,guest=other"), "plain");  // kvm_stat: the plain name wins over guest=
  EXPECT_EQ(name("debug-threads=on,guest=late"), "late");
  EXPECT_EQ(name("process=p"), "");
  EXPECT_EQ(IdentifyVmm(std::string("qemu-system-x86_64\0--name\0x\0-name\0y", 36), "").name, "y");
  EXPECT_EQ(IdentifyVmm(std::string("/usr/bin/bash\0-name\0x", 21), "bash").vmm, "");
}

TEST(VmIdentity, FirecrackerUnderJailerById) {
  FakeProc proc;
  VmmIdentity id = IdentifyVmm(proc.Cmdline(6200), "firecracker");
  EXPECT_EQ(id.vmm, "firecracker");
  EXPECT_EQ(id.name, "551e7604-e35c-42b3-b825-416853441234");
  EXPECT_EQ(IdentifyVmm(std::string("firecracker\0--id=anonymous-instance", 35), "").name, "");
}

TEST(VmIdentity, CloudHypervisorFromApiSocketAndPlatformUuid) {
  FakeProc proc;
  VmmIdentity kata = IdentifyVmm(proc.Cmdline(7300), "cloud-hyperviso");
  EXPECT_EQ(kata.vmm, "cloud-hypervisor");
  EXPECT_EQ(kata.name, "4771496ec1508dd345556a2bd4765de6b3b07996de9fb53166fcad1c814743bc");
  VmmIdentity edge = IdentifyVmm(proc.Cmdline(7400), "cloud-hyperviso");
  EXPECT_EQ(edge.name, "edge-7");
  EXPECT_EQ(edge.uuid, "2b8c6e3a-6f1d-4c1e-9a55-0d3f6b1e7c42");
}

TEST(VmIdentity, CrosvmFromItsSocket) {
  FakeProc proc;
  VmmIdentity id = IdentifyVmm(proc.Cmdline(8400), "crosvm");
  EXPECT_EQ(id.vmm, "crosvm");
  EXPECT_EQ(id.name, "vm3");
}

TEST(VmIdentity, VcpuIndexByExactThreadName) {
  EXPECT_EQ(VcpuIndexFromThreadName("CPU 3/KVM"), 3);
  EXPECT_EQ(VcpuIndexFromThreadName("CPU 12/KVM"), 12);
  EXPECT_EQ(VcpuIndexFromThreadName("fc_vcpu 1"), 1);
  EXPECT_EQ(VcpuIndexFromThreadName("vcpu7"), 7);
  EXPECT_EQ(VcpuIndexFromThreadName("crosvm_vcpu2"), 2);
  for (const char* no : {"CPU 3/KV", "CPU -1/KVM", "CPU /KVM", "vcpu", "vcpu 1", "vcpu1x", "fc_vcpu1", "xcrosvm_vcpu1",
                         "IO mon_iothread", "qemu-system-x86", "CPU 1/KVM "}) {
    EXPECT_FALSE(VcpuIndexFromThreadName(no).has_value()) << no;
  }
}

TEST(VmIdentity, DirectoryNamesEveryVmOfTheFakeHost) {
  FakeProc proc;
  ProcVmDirectory dir(proc.root());
  struct Want {
    int tid;
    const char* domain;
    const char* vmm;
    int pid;
    int vcpu;
  };
  for (const Want& w :
       {Want{4250, "web01", "qemu", 4242, 0}, Want{4251, "web01", "qemu", 4242, 1},
        Want{5105, "db,primary", "qemu", 5100, 0},
        Want{6204, "551e7604-e35c-42b3-b825-416853441234", "firecracker", 6200, 1},
        Want{7311, "4771496ec1508dd345556a2bd4765de6b3b07996de9fb53166fcad1c814743bc", "cloud-hypervisor", 7300, 1},
        Want{7405, "edge-7", "cloud-hypervisor", 7400, 0}, Want{8412, "vm3", "crosvm", 8400, 2}}) {
    const LiveVm& vm = dir.VmOf(w.tid);
    EXPECT_EQ(vm.domain, w.domain) << w.tid;
    EXPECT_EQ(vm.identity.vmm, w.vmm) << w.tid;
    EXPECT_EQ(vm.pid, w.pid) << w.tid;
    EXPECT_EQ(dir.VcpuOf(w.tid, 99), w.vcpu) << w.tid;  // the thread name wins over vcpu_id
  }
  EXPECT_EQ(dir.vm_count(), 6u);
  // A thread whose name gives no index takes kvm_entry's vcpu_id, else none.
  EXPECT_EQ(dir.VcpuOf(4246, 5), 5);
  EXPECT_FALSE(dir.VcpuOf(4246, -1).has_value());
  // An unreadable thread is a VM of its own, named by nothing but its id.
  EXPECT_EQ(dir.VmOf(31337).domain, "pid-31337");
}

TEST(VmIdentity, ReusedPidIsANewVm) {
  FakeProc proc;
  ProcVmDirectory dir(proc.root());
  EXPECT_EQ(dir.VmOf(4250).domain, "web01");
  dir.Revalidate();
  EXPECT_EQ(dir.VmOf(4250).domain, "web01");  // unchanged: still cached, still alive
  EXPECT_TRUE(dir.VmOf(4250).alive);
  // web01 ends; pid 4242 and tid 4250 come back as another guest (new start times).
  proc.SetStart(4242, 9000000);
  proc.SetStart(4250, 9000010);
  std::string other = std::string("qemu-system-x86_64\0-name\0guest=web02\0", 37);
  proc.Write(4242, "cmdline", other);
  EXPECT_EQ(dir.VmOf(4250).domain, "web01");  // until revalidated, the cache answers
  dir.Revalidate();
  EXPECT_EQ(dir.VmOf(4250).domain, "web02");
  EXPECT_EQ(dir.VmOf(4250).start_ticks, 9000000u);
  // A process that is gone is marked so, then forgotten at the next revalidation.
  EXPECT_EQ(dir.VmOf(5105).domain, "db,primary");
  proc.Remove(5105);
  proc.Remove(5100);
  dir.Revalidate();
  auto alive = [&](int pid) {
    for (const auto& [key, vm] : dir.vms())
      if (vm.pid == pid) return std::optional<bool>(vm.alive);
    return std::optional<bool>();
  };
  EXPECT_EQ(alive(5100), false);
  EXPECT_EQ(alive(4242), true);
  dir.Revalidate();
  EXPECT_FALSE(alive(5100).has_value());
  EXPECT_EQ(dir.VmOf(5105).domain, "pid-5105");  // a new thread of that id is nobody now
}

TEST(VmIdentity, RunningVmsResolvedBeforeTheirVmmExits) {
  // serve and top read exits once per interval; a VMM that ran for less is gone by then. The scan
  // while they wait (debugfs kvm/<pid>-<fd> lists running VMs) must have named it already.
  FakeProc proc;
  fs::path root(proc.root());
  fs::create_directories(root / "debugfs-kvm" / "4242-12" / "vcpu0");
  fs::create_directories(root / "4242" / "task" / "4250");
  fs::create_directories(root / "4242" / "task" / "4251");
  ProcVmDirectory dir(proc.root(), (root / "debugfs-kvm").string());
  dir.ResolveRunningVms();
  EXPECT_EQ(dir.vm_count(), 1u);  // web01 only: no exit of the others was asked about
  proc.Remove(4250);
  proc.Remove(4251);
  proc.Remove(4242);
  EXPECT_EQ(dir.VmOf(4251).domain, "web01");
  EXPECT_EQ(dir.VcpuOf(4251, -1), 1);
  // One revalidation marks it gone and keeps it, for exits read just after; the next forgets it.
  dir.Revalidate();
  EXPECT_EQ(dir.VmOf(4250).domain, "web01");
  EXPECT_FALSE(dir.VmOf(4250).alive);
  dir.Revalidate();
  EXPECT_EQ(dir.VmOf(4250).domain, "pid-4250");
}

}  // namespace
}  // namespace exitscope
