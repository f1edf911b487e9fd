#include "analysis/vm_grouper.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

namespace exitscope {
namespace {

// QEMU names its KVM vCPU threads "CPU %d/KVM" (qemu accel/kvm/kvm-accel-ops.c); the index is the
// vCPU's. Returns it, or nothing for other names.
std::optional<int32_t> QemuVcpuIndex(std::string_view comm) {
  auto n = VcpuIndexFromThreadName(comm);
  return n && comm.starts_with("CPU ") ? n : std::nullopt;
}

// The GUEST option that names process `pid`: exitscope record's, whose vCPU threads the trace
// maps to that process (a trace-cmd GUEST option names threads only). A few pairs per VM: a scan.
const GuestInfo* GuestOfProcess(const TraceMeta& meta, int64_t pid) {
  for (const GuestInfo& g : meta.guests) {
    for (const auto& [vcpu, tid] : g.vcpu_to_host_tid) {
      auto t = meta.tgid_by_tid.find(tid);
      if (t != meta.tgid_by_tid.end() && t->second == pid && !g.name.empty()) return &g;
    }
  }
  return nullptr;
}

}  // namespace

VmGrouper::VmGrouper(const TraceMeta& meta) : meta_(meta) {
  for (size_t i = 0; i < meta_.guests.size(); ++i) {
    const GuestInfo& g = meta_.guests[i];
    int64_t id = INT64_MAX;
    for (const auto& [vcpu, tid] : g.vcpu_to_host_tid) id = std::min<int64_t>(id, tid);
    for (const auto& [vcpu, tid] : g.vcpu_to_host_tid) guest_by_tid_[tid] = {i, id, vcpu};
  }
}

const GuestInfo* VmGrouper::Guest(int32_t tid) const {
  const Vm vm = Resolve(tid);
  if (vm.kind == Kind::kProcess) return GuestOfProcess(meta_, vm.id);
  if (auto g = guest_by_tid_.find(tid); g != guest_by_tid_.end()) return &meta_.guests[g->second.guest];
  return nullptr;
}

VmGrouper::Vm VmGrouper::Resolve(int32_t tid) const {
  if (auto it = memo_.find(tid); it != memo_.end()) return it->second;
  Vm vm{Kind::kThread, tid};
  if (auto t = meta_.tgid_by_tid.find(tid); t != meta_.tgid_by_tid.end()) {
    vm = {Kind::kProcess, t->second};
  } else if (auto g = guest_by_tid_.find(tid); g != guest_by_tid_.end()) {
    vm = {Kind::kGuest, g->second.vm_id};
  } else if (auto n = QemuVcpuIndex(Comm(tid)); n && *n <= tid) {
    vm = {Kind::kQemuThreads, static_cast<int64_t>(tid) - *n};
  }
  memo_.emplace(tid, vm);
  return vm;
}

int64_t VmGrouper::VmId(int32_t tid) const { return Resolve(tid).id; }

std::optional<int32_t> VmGrouper::GuestVcpu(int32_t tid) const {
  auto g = guest_by_tid_.find(tid);
  return g == guest_by_tid_.end() ? std::nullopt : std::optional<int32_t>(g->second.vcpu);
}

std::string VmGrouper::Comm(int64_t tid) const {
  auto c = meta_.comm_by_tid.find(static_cast<int32_t>(tid));
  return c == meta_.comm_by_tid.end() ? std::string() : c->second;
}

std::vector<std::string> VmGrouper::Labels(const std::vector<int32_t>& tids) const {
  std::map<int64_t, std::vector<int32_t>> by_vm;  // one pass: labelling per VM over all threads was quadratic
  for (int32_t tid : tids) by_vm[VmId(tid)].push_back(tid);
  std::vector<std::string> out;
  for (auto& [id, vm_tids] : by_vm) {
    std::sort(vm_tids.begin(), vm_tids.end());
    out.push_back(Label(id, vm_tids));
  }
  return out;
}

std::string VmGrouper::Label(int64_t id, const std::vector<int32_t>& tids) const {
  Kind kind = tids.empty() ? Kind::kThread : Resolve(tids.front()).kind;
  switch (kind) {
    case Kind::kProcess: {
      std::string c = Comm(id);
      if (const GuestInfo* g = GuestOfProcess(meta_, id)) {  // named as `top` named it live
        std::string map;
        for (const auto& [vcpu, tid] : g->vcpu_to_host_tid)
          map += fmt::format("{}vCPU {} → tid {}", map.empty() ? "" : ", ", vcpu, tid);
        return fmt::format("{} (pid {}{}; {})", g->name, id, c.empty() ? "" : ", " + c, map);
      }
      return c.empty() ? fmt::format("pid {}", id) : fmt::format("{} (pid {})", c, id);
    }
    case Kind::kGuest: {
      const GuestInfo& g = meta_.guests[guest_by_tid_.at(tids.front()).guest];
      std::string map;
      for (const auto& [vcpu, tid] : g.vcpu_to_host_tid)
        map += fmt::format("{}vCPU {} → tid {}", map.empty() ? "" : ", ", vcpu, tid);
      // trace-cmd writes the name given with -A/--name; an empty one means none was recorded.
      return g.name.empty() ? fmt::format("unnamed guest (trace-cmd GUEST option, no name recorded: {})", map)
                            : fmt::format("{} (trace-cmd GUEST option: {})", g.name, map);
    }
    case Kind::kQemuThreads: {
      std::string list;
      for (int32_t tid : tids) list += fmt::format("{}tid {} {}", list.empty() ? "" : ", ", tid, Comm(tid));
      return fmt::format("QEMU (process not recorded; vCPU threads grouped by name and consecutive tids: {})", list);
    }
    case Kind::kThread: break;
  }
  std::string c = Comm(id);
  return fmt::format("{}tid {}, process not recorded{}", c.empty() ? "" : c + " (", id, c.empty() ? "" : ")");
}

std::string VmGrouper::FrameLabel(int32_t tid) const {
  Vm vm = Resolve(tid);
  auto word = [](std::string s) {
    for (char& ch : s) {
      if (ch == ' ' || ch == ';' || ch == '/') ch = '_';
    }
    return s;
  };
  switch (vm.kind) {
    case Kind::kProcess: {
      if (const GuestInfo* g = GuestOfProcess(meta_, vm.id)) return word(g->name);
      std::string c = Comm(vm.id);
      return c.empty() ? fmt::format("pid-{}", vm.id) : word(fmt::format("{}-{}", c, vm.id));
    }
    case Kind::kGuest: {
      const GuestInfo& g = meta_.guests[guest_by_tid_.at(tid).guest];
      return g.name.empty() ? fmt::format("guest-{}", vm.id) : word(g.name);
    }
    case Kind::kQemuThreads: return fmt::format("qemu-{}", vm.id);
    case Kind::kThread: break;
  }
  std::string c = Comm(tid);
  return c.empty() ? fmt::format("tid-{}", tid) : word(fmt::format("{}-{}", c, tid));
}

std::optional<int32_t> VmGrouper::VcpuIndex(int32_t tid, int32_t vcpu_id) const {
  if (vcpu_id >= 0) return vcpu_id;
  if (auto g = GuestVcpu(tid)) return g;
  return QemuVcpuIndex(Comm(tid));
}

}  // namespace exitscope
