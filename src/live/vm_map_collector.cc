#include "live/vm_map_collector.h"

#include "base/byte_reader.h"

namespace exitscope {

VmMapCollector::VmMapCollector(std::string_view header_page, const std::vector<EnabledEvent>& events,
                               uint32_t page_size, std::string proc_root, std::string debugfs_kvm)
    : layout_(PageLayout::FromHeaderPage(header_page)),
      page_size_(page_size),
      dir_(std::move(proc_root), std::move(debugfs_kvm)) {
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

void VmMapCollector::Scan() {
  if (!exit_events_.empty()) dir_.ResolveRunningVms();  // OnRecord's Resolve then finds them cached
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
