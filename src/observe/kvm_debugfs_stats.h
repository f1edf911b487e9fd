// KVM's own counters, read as kvm_stat reads them: one directory per VM under
// /sys/kernel/debug/kvm/, named "<pid>-<fd>" (virt/kvm/kvm_main.c kvm_create_vm_debugfs: the VMM's
// pid and the VM's file descriptor), holding one file per VM stat and per vCPU stat (the vCPU ones
// summed over the VM's vCPUs), each a decimal number; vcpuN/ subdirectories hold other things.
// In: the debugfs kvm directory. Out: per VM its counters; the deltas between two reads.
// Assumption: counters only grow while the VM lives (a pid-fd pair seen again after a VM went is
// a new VM: its counters restart, and a shrinking counter is read as a restart).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"

namespace exitscope {

inline constexpr const char* kKvmDebugfsDir = "/sys/kernel/debug/kvm";

struct KvmVmCounters {
  int pid = 0;
  int vm_fd = 0;
  std::map<std::string, uint64_t> counters;              // "exits" -> 12345 ... (vCPU stats summed over the VM)
  std::string source = "debugfs";                        // or "stats-fd" (observe/kvm_stats_fd.h)
  std::map<int, std::map<std::string, uint64_t>> vcpus;  // per vCPU index; stats-fd only
};

// Every VM directory under `root`, sorted by (pid, fd). 69 with a hint when `root` is missing (no
// debugfs mounted, or kvm not loaded), 77 when it cannot be read.
Result<std::vector<KvmVmCounters>> ReadKvmDebugfs(const std::string& root = kKvmDebugfsDir);

// The exit-related counters shown first, in this order, when present (kvm_stat's names; the rest
// follow by name): exits, halt_exits, io_exits, mmio_exits, irq_exits, signal_exits, ...
const std::vector<std::string>& KvmExitCounterOrder();

// now - before per counter of the same VM (pid, fd); a VM absent before counts from 0, a counter
// that shrank restarts from its new value.
std::map<std::string, uint64_t> CounterDelta(const KvmVmCounters& now, const KvmVmCounters* before);

}  // namespace exitscope
