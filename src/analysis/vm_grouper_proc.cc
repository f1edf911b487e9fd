// VM identity on a live host: VMM command lines and /proc (see vm_grouper.h).
#include <dirent.h>
#include <unistd.h>

#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "analysis/vm_grouper.h"

namespace exitscope {
namespace {

std::vector<std::string_view> SplitNul(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t end = s.find('\0');
    out.push_back(s.substr(0, end));
    if (end == std::string_view::npos) break;
    s.remove_prefix(end + 1);
  }
  return out;
}

// Often enough to see a VMM that runs for a fraction of a second (at 200 ms record once missed the
// kvmhost bench VM, whose exits span ~0.1 s); a debugfs scan is a readdir of kvm/ and, for a new
// VM, of its task/. Without debugfs every process's fd links are read: that runs less often.
constexpr auto kScanInterval = std::chrono::milliseconds(50);
constexpr auto kProcScanInterval = std::chrono::milliseconds(1000);

std::vector<std::string> DirNames(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (dirent* e = ::readdir(d))
      if (e->d_name[0] != '.') out.emplace_back(e->d_name);
    ::closedir(d);
  }
  return out;
}

bool IsNumber(const std::string& s) { return !s.empty() && s.find_first_not_of("0123456789") == std::string::npos; }

std::string_view BaseName(std::string_view path) {
  size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The value of option `name` (also spelled with two dashes, or as --name=value); the last one wins,
// as in QEMU, Firecracker and cloud-hypervisor, whose later options override earlier ones.
std::optional<std::string_view> OptionValue(const std::vector<std::string_view>& args, std::string_view name) {
  std::optional<std::string_view> value;
  for (size_t i = 1; i < args.size(); ++i) {
    std::string_view a = args[i];
    if (a.starts_with("--")) a.remove_prefix(1);
    if (!a.starts_with("-") || a.substr(1, name.size()) != name) continue;
    std::string_view rest = a.substr(1 + name.size());
    if (rest.empty() && i + 1 < args.size()) {
      value = args[++i];
    } else if (rest.starts_with("=")) {
      value = rest.substr(1);
    }
  }
  return value;
}

// QEMU's option syntax (util/qemu-option.c): elements split at ',', and ",," stands for a literal
// comma inside an element.
std::vector<std::string> QemuOptElements(std::string_view v) {
  std::vector<std::string> out(1);
  for (size_t i = 0; i < v.size(); ++i) {
    if (v[i] != ',') {
      out.back() += v[i];
    } else if (i + 1 < v.size() && v[i + 1] == ',') {
      out.back() += ',';
      ++i;
    } else {
      out.emplace_back();
    }
  }
  return out;
}

// QEMU's -name: "guest=NAME,..." or the plain form "NAME,..." (the implied option is guest, so only
// the first element may be plain; kvm_stat lets the plain name win over guest=).
std::string QemuName(std::string_view value) {
  std::vector<std::string> el = QemuOptElements(value);
  if (!el.empty() && el.front().find('=') == std::string::npos) return el.front();
  std::string name;
  for (const auto& e : el) {
    if (e.starts_with("guest=")) name = e.substr(6);
  }
  return name;
}

// The value of key `key` in a "k=v,k=v" option (cloud-hypervisor's --platform, --api-socket).
std::string KeyValue(std::string_view value, std::string_view key) {
  std::string v;
  for (const auto& e : QemuOptElements(value)) {
    if (e.size() > key.size() && e.compare(0, key.size(), key) == 0 && e[key.size()] == '=')
      v = e.substr(key.size() + 1);
  }
  return v;
}

// A control socket's path names its VM: ".../web01.sock" → "web01". Kata calls every sandbox's
// socket clh-api.sock in a directory named for the sandbox (/run/vc/vm/<id>/clh-api.sock).
std::string NameFromSocket(std::string_view path) {
  std::string_view base = BaseName(path);
  if (base.ends_with(".sock")) base.remove_suffix(5);
  if (base == "clh-api" || base == "api" || base.empty()) {
    std::string_view dir = path.substr(0, path.size() - BaseName(path).size());
    while (dir.ends_with("/")) dir.remove_suffix(1);
    return std::string(BaseName(dir));
  }
  return std::string(base);
}

bool IsQemu(std::string_view exe) { return exe.starts_with("qemu-system-") || exe == "qemu-kvm" || exe == "kvm"; }

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\0')) s.pop_back();
  return s;
}

}  // namespace

VmmIdentity IdentifyVmm(std::string_view cmdline, std::string_view comm) {
  std::vector<std::string_view> args = SplitNul(cmdline);
  std::string_view exe = args.empty() ? comm : BaseName(args.front());
  VmmIdentity id;
  if (IsQemu(exe) || IsQemu(comm)) {
    id.vmm = "qemu";
    if (auto v = OptionValue(args, "name")) id.name = QemuName(*v);
    if (auto v = OptionValue(args, "uuid")) id.uuid = std::string(*v);
  } else if (exe == "firecracker" || comm == "firecracker") {
    id.vmm = "firecracker";
    // The jailer passes its own --id on to firecracker; without one firecracker calls itself
    // "anonymous-instance", which names nothing.
    if (auto v = OptionValue(args, "id"); v && *v != "anonymous-instance") id.name = std::string(*v);
  } else if (exe == "cloud-hypervisor" || comm.starts_with("cloud-hyperviso")) {
    id.vmm = "cloud-hypervisor";
    if (auto v = OptionValue(args, "api-socket")) {
      std::string path = v->find('=') == std::string_view::npos ? std::string(*v) : KeyValue(*v, "path");
      if (!path.empty()) id.name = NameFromSocket(path);
    }
    if (auto v = OptionValue(args, "platform")) id.uuid = KeyValue(*v, "uuid");
  } else if (exe == "crosvm" || comm == "crosvm") {
    id.vmm = "crosvm";
    if (auto v = OptionValue(args, "socket")) id.name = NameFromSocket(*v);
  }
  return id;
}

std::optional<int32_t> VcpuIndexFromThreadName(std::string_view comm, std::string_view* vmm) {
  // Thread names the VMMs give their vCPU threads: QEMU accel/kvm/kvm-accel-ops.c "CPU %d/KVM";
  // Firecracker "fc_vcpu {}"; cloud-hypervisor "vcpu{}"; crosvm "crosvm_vcpu{}".
  struct Pattern {
    std::string_view prefix, suffix, vmm;
  };
  static constexpr Pattern kPatterns[] = {{"CPU ", "/KVM", "qemu"},
                                          {"fc_vcpu ", "", "firecracker"},
                                          {"vcpu", "", "cloud-hypervisor"},
                                          {"crosvm_vcpu", "", "crosvm"}};
  for (const Pattern& p : kPatterns) {
    if (comm.size() <= p.prefix.size() + p.suffix.size() || !comm.starts_with(p.prefix) || !comm.ends_with(p.suffix))
      continue;
    std::string_view digits = comm.substr(p.prefix.size(), comm.size() - p.prefix.size() - p.suffix.size());
    if (digits.find_first_not_of("0123456789") != std::string_view::npos) continue;
    int32_t n = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc() || end != digits.data() + digits.size()) continue;
    if (vmm) *vmm = p.vmm;
    return n;
  }
  return std::nullopt;
}

std::string ProcVmDirectory::Read(const std::string& rel) const {
  std::ifstream in(root_ + "/" + rel, std::ios::binary);
  if (!in) return {};
  std::string s;
  // A command line is at most a few pages (the kernel caps what cmdline shows at the argument area).
  constexpr size_t kMaxProcFile = 1 << 20;
  s.resize(kMaxProcFile);
  in.read(s.data(), kMaxProcFile);
  s.resize(static_cast<size_t>(in.gcount()));
  return s;
}

std::optional<uint64_t> ProcVmDirectory::StartTicks(int32_t id) const {
  // proc(5): field 22 of /proc/<pid>/stat is starttime; fields are counted after the comm in
  // parentheses, which may itself hold spaces and ')'.
  std::string stat = Read(std::to_string(id) + "/stat");
  size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::istringstream fields(stat.substr(close + 1));
  std::string f;
  for (int field = 3; fields >> f; ++field) {
    if (field == 22) return std::strtoull(f.c_str(), nullptr, 10);
  }
  return std::nullopt;
}

const LiveVm& ProcVmDirectory::VmOf(int32_t tid) {
  if (auto t = threads_.find(tid); t != threads_.end()) {
    if (auto v = vms_.find(t->second.vm); v != vms_.end()) return v->second;
    threads_.erase(t);
  }
  Thread th;
  th.start_ticks = StartTicks(tid).value_or(0);
  int32_t pid = tid;
  std::istringstream status(Read(std::to_string(tid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Tgid:", 0) == 0) {
      pid = std::atoi(line.c_str() + 5);
      break;
    }
  }
  th.vm = {pid, StartTicks(pid).value_or(0)};
  th.vcpu = VcpuIndexFromThreadName(Trimmed(Read(std::to_string(tid) + "/comm")));
  auto [it, fresh] = vms_.try_emplace(th.vm);
  if (fresh) {
    LiveVm& vm = it->second;
    vm.pid = pid;
    vm.start_ticks = th.vm.second;
    vm.comm = Trimmed(Read(std::to_string(pid) + "/comm"));
    vm.identity = IdentifyVmm(Read(std::to_string(pid) + "/cmdline"), vm.comm);
    vm.domain = !vm.identity.name.empty()   ? vm.identity.name
                : !vm.identity.uuid.empty() ? vm.identity.uuid
                                            : (vm.comm.empty() ? "pid" : vm.comm) + "-" + std::to_string(pid);
  }
  threads_[tid] = th;
  return it->second;
}

std::optional<int32_t> ProcVmDirectory::VcpuOf(int32_t tid, int32_t vcpu_id) {
  VmOf(tid);
  if (auto n = threads_.at(tid).vcpu) return n;
  if (vcpu_id >= 0) return vcpu_id;
  return std::nullopt;
}

std::vector<int32_t> ProcVmDirectory::RunningVmPids(bool debugfs) const {
  std::vector<int32_t> pids;
  // debugfs names each VM's directory "<pid>-<vm fd>" (virt/kvm/kvm_main.c kvm_create_vm_debugfs).
  if (debugfs) {
    for (const std::string& n : DirNames(debugfs_kvm_)) {
      size_t dash = n.find('-');
      if (dash != std::string::npos && IsNumber(n.substr(0, dash))) pids.push_back(std::atoi(n.c_str()));
    }
    return pids;
  }
  // A VMM holds the VM's file, which /proc shows as "anon_inode:kvm-vm" (kvm_dev_ioctl_create_vm).
  for (const std::string& p : DirNames(root_)) {
    if (!IsNumber(p)) continue;
    std::string fd_dir = root_ + "/" + p + "/fd";
    for (const std::string& fd : DirNames(fd_dir)) {
      char link[64] = {};
      ssize_t n = ::readlink((fd_dir + "/" + fd).c_str(), link, sizeof(link) - 1);
      if (n > 0 && std::strcmp(link, "anon_inode:kvm-vm") == 0) {
        pids.push_back(std::atoi(p.c_str()));
        break;
      }
    }
  }
  return pids;
}

void ProcVmDirectory::ResolveRunningVms() {
  auto now = std::chrono::steady_clock::now();
  if (now < next_scan_) return;
  const bool debugfs = ::access(debugfs_kvm_.c_str(), R_OK) == 0;
  next_scan_ = now + (debugfs ? kScanInterval : kProcScanInterval);
  for (int32_t pid : RunningVmPids(debugfs)) {
    for (const std::string& t : DirNames(root_ + "/" + std::to_string(pid) + "/task")) {
      if (!IsNumber(t)) continue;
      int32_t tid = std::atoi(t.c_str());
      if (threads_.find(tid) == threads_.end()) VmOf(tid);
    }
  }
}

void ProcVmDirectory::Revalidate() {
  for (auto it = threads_.begin(); it != threads_.end();) {
    std::optional<uint64_t> start = StartTicks(it->first);
    if (start == it->second.start_ticks) {
      ++it;
    } else if (!start && !it->second.gone) {
      it->second.gone = true;
      ++it;
    } else {
      it = threads_.erase(it);
    }
  }
  for (auto it = vms_.begin(); it != vms_.end();) {
    if (!it->second.alive) {
      it = vms_.erase(it);
      continue;
    }
    it->second.alive = StartTicks(it->first.first).value_or(UINT64_MAX) == it->first.second;
    ++it;
  }
}

}  // namespace exitscope
