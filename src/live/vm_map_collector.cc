#include "live/vm_map_collector.h"

#include <dirent.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "base/byte_reader.h"

namespace exitscope {
namespace {

// Often enough to see a VMM that runs for a fraction of a second; a scan reads one directory
// (debugfs) or, without debugfs, every process's fd links: that fallback runs less often.
constexpr auto kScanInterval = std::chrono::milliseconds(200);
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

}  // namespace

VmMapCollector::VmMapCollector(std::string_view header_page, const std::vector<EnabledEvent>& events,
                               uint32_t page_size, std::string proc_root, std::string debugfs_kvm)
    : layout_(PageLayout::FromHeaderPage(header_page)),
      page_size_(page_size),
      proc_root_(proc_root),
      debugfs_kvm_(std::move(debugfs_kvm)),
      dir_(std::move(proc_root)) {
  formats_.reserve(events.size());  // exit_events_ points into it
  for (const auto& e : events) {
    auto f = ParseEventFormat(e.format, e.system);
    if (!f.ok()) continue;
    formats_.push_back(std::move(*f));
  }
  for (const EventFormat& f : formats_) {
    if (const FieldFormat* t = f.Field("common_type")) type_ = *t;
    if (const FieldFormat* p = f.Field("common_pid")) pid_ = *p;
    if (f.system == "kvm" && (f.name == "kvm_exit" || f.name == "kvm_entry")) exit_events_[f.id] = {f.Field("vcpu_id")};
  }
}

std::unique_ptr<VmMapCollector> VmMapCollector::ForInstance(const TracefsInstance& instance) {
  auto hp = instance.Read("events/header_page", true);
  return std::make_unique<VmMapCollector>(hp.ok() ? *hp : std::string(), instance.events(), instance.page_size());
}

void VmMapCollector::AddPages(std::span<const uint8_t> pages) {
  if (exit_events_.empty() || page_size_ == 0) return;
  for (size_t off = 0; off + page_size_ <= pages.size(); off += page_size_) {
    PageWalker walker;
    uint64_t missed = 0;
    if (!walker.Begin(pages.subspan(off, page_size_), layout_, &stats_, &missed)) continue;
    PageRecord rec;
    while (walker.Next(&rec)) {
      auto ev = exit_events_.find(static_cast<uint16_t>(ReadUnsigned(&type_, rec.payload)));
      if (ev == exit_events_.end()) continue;
      OnRecord(static_cast<int32_t>(ReadSigned(&pid_, rec.payload)), ev->second, rec.payload);
    }
  }
}

std::unordered_map<int32_t, VmMapCollector::Thread>::iterator VmMapCollector::Resolve(int32_t tid, int32_t vcpu_id) {
  const LiveVm& vm = dir_.VmOf(tid);
  std::pair<int32_t, uint64_t> key{vm.pid, vm.start_ticks};
  vms_.try_emplace(key, vm);
  return threads_.emplace(tid, Thread{key, dir_.VcpuOf(tid, vcpu_id).value_or(-1), false}).first;
}

void VmMapCollector::OnRecord(int32_t tid, const ExitEvent& ev, std::span<const uint8_t> payload) {
  if (tid <= 0) return;
  auto it = threads_.find(tid);
  if (it != threads_.end() && it->second.exited && it->second.vcpu >= 0) return;  // the common case
  int32_t vcpu_id = ev.vcpu_id ? static_cast<int32_t>(ReadSigned(ev.vcpu_id, payload)) : -1;
  if (it == threads_.end()) it = Resolve(tid, vcpu_id);
  it->second.exited = true;
  if (it->second.vcpu < 0 && vcpu_id >= 0) it->second.vcpu = vcpu_id;
}

std::vector<int32_t> VmMapCollector::RunningVmPids() const {
  std::vector<int32_t> pids;
  // debugfs names each VM's directory "<pid>-<vm fd>" (virt/kvm/kvm_main.c kvm_create_vm_debugfs).
  if (::access(debugfs_kvm_.c_str(), R_OK) == 0) {
    for (const std::string& n : DirNames(debugfs_kvm_)) {
      size_t dash = n.find('-');
      if (dash != std::string::npos && IsNumber(n.substr(0, dash))) pids.push_back(std::atoi(n.c_str()));
    }
    return pids;
  }
  // A VMM holds the VM's file, which /proc shows as "anon_inode:kvm-vm" (kvm_dev_ioctl_create_vm).
  for (const std::string& p : DirNames(proc_root_)) {
    if (!IsNumber(p)) continue;
    std::string fd_dir = proc_root_ + "/" + p + "/fd";
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

void VmMapCollector::Scan() {
  auto now = std::chrono::steady_clock::now();
  if (now < next_scan_ || exit_events_.empty()) return;
  next_scan_ = now + (::access(debugfs_kvm_.c_str(), R_OK) == 0 ? kScanInterval : kProcScanInterval);
  for (int32_t pid : RunningVmPids()) {
    for (const std::string& t : DirNames(proc_root_ + "/" + std::to_string(pid) + "/task")) {
      if (!IsNumber(t)) continue;
      int32_t tid = std::atoi(t.c_str());
      if (threads_.find(tid) == threads_.end()) Resolve(tid, -1);
    }
  }
}

std::vector<VmMapCollector::Vm> VmMapCollector::Vms() const {
  std::map<std::pair<int32_t, uint64_t>, Vm> by_vm;
  for (const auto& [tid, t] : threads_) {
    if (!t.exited) continue;  // a thread of a running VM that never exited while recorded
    const LiveVm& live = vms_.at(t.vm);
    if (live.comm.empty()) continue;  // its /proc entry was gone: nothing known to record
    Vm& vm = by_vm[t.vm];
    vm.guest.name = live.domain;
    vm.recorded.pid = live.pid;
    vm.recorded.comm = live.comm;
    vm.recorded.vmm = live.identity.vmm;
    vm.recorded.uuid = live.identity.uuid;
    vm.recorded.vcpu_by_tid[tid] = t.vcpu;
    if (t.vcpu >= 0) vm.guest.vcpu_to_host_tid.try_emplace(t.vcpu, tid);
  }
  std::vector<Vm> out;
  for (auto& [key, vm] : by_vm) out.push_back(std::move(vm));
  return out;
}

}  // namespace exitscope
