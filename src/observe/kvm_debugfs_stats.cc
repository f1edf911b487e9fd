#include "observe/kvm_debugfs_stats.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <tuple>

namespace exitscope {
namespace fs = std::filesystem;

Result<std::vector<KvmVmCounters>> ReadKvmDebugfs(const std::string& root) {
  std::error_code ec;
  fs::directory_iterator it(root, ec);
  if (ec) {
    const int code = ec.value() == EACCES || ec.value() == EPERM ? kExitNoPerm : kExitUnavailable;
    return MakeError(code, "observe.no-kvm-debugfs", "cannot read " + root + ": " + ec.message(),
                     code == kExitNoPerm ? "run as root: debugfs is root's"
                                         : "mount debugfs (`mount -t debugfs none /sys/kernel/debug`) and load kvm");
  }
  std::vector<KvmVmCounters> vms;
  for (const auto& entry : it) {
    if (!entry.is_directory(ec)) continue;
    const std::string name = entry.path().filename().string();
    KvmVmCounters vm;
    const char* b = name.data();
    const char* e = b + name.size();
    auto [p, perr] = std::from_chars(b, e, vm.pid);
    if (perr != std::errc() || p == e || *p != '-') continue;
    auto [q, ferr] = std::from_chars(p + 1, e, vm.vm_fd);
    if (ferr != std::errc() || q != e) continue;
    for (const auto& f : fs::directory_iterator(entry.path(), ec)) {
      if (!f.is_regular_file(ec)) continue;
      std::ifstream in(f.path());
      std::string text;
      if (!(in >> text)) continue;
      uint64_t v = 0;
      auto [r, verr] = std::from_chars(text.data(), text.data() + text.size(), v);
      if (verr != std::errc() || r != text.data() + text.size()) continue;  // not a counter (e.g. a table)
      vm.counters[f.path().filename().string()] = v;
    }
    vms.push_back(std::move(vm));
  }
  std::sort(vms.begin(), vms.end(), [](const KvmVmCounters& a, const KvmVmCounters& b) {
    return std::tie(a.pid, a.vm_fd) < std::tie(b.pid, b.vm_fd);
  });
  return vms;
}

const std::vector<std::string>& KvmExitCounterOrder() {
  // struct kvm_vcpu_stat (arch/x86/include/asm/kvm_host.h) and the generic halt stats
  // (include/linux/kvm_types.h struct kvm_vcpu_stat_generic), as kvm_stat lists them.
  static const std::vector<std::string> order = {"exits",
                                                 "halt_exits",
                                                 "io_exits",
                                                 "mmio_exits",
                                                 "irq_exits",
                                                 "signal_exits",
                                                 "request_irq_exits",
                                                 "irq_window_exits",
                                                 "nmi_window_exits",
                                                 "l1d_flush",
                                                 "insn_emulation",
                                                 "hypercalls",
                                                 "pf_taken",
                                                 "pf_fixed",
                                                 "halt_successful_poll",
                                                 "halt_attempted_poll",
                                                 "halt_poll_invalid",
                                                 "halt_wakeup",
                                                 "halt_poll_success_ns",
                                                 "halt_poll_fail_ns",
                                                 "halt_wait_ns"};
  return order;
}

std::map<std::string, uint64_t> CounterDelta(const KvmVmCounters& now, const KvmVmCounters* before) {
  std::map<std::string, uint64_t> d;
  for (const auto& [name, v] : now.counters) {
    uint64_t old = 0;
    if (before) {
      if (auto it = before->counters.find(name); it != before->counters.end()) old = it->second;
    }
    d[name] = v >= old ? v - old : v;
  }
  return d;
}

}  // namespace exitscope
