// KVM's binary statistics (KVM_GET_STATS_FD, Linux >= 5.14; Documentation/virt/kvm/api.rst): a file
// per VM and per vCPU holding a header (struct kvm_stats_header), one descriptor per stat (struct
// kvm_stats_desc followed by a name of header.name_size bytes) and a data block of u64s.
// Reaching them from outside the VMM: KVM answers a VM or vCPU ioctl, KVM_GET_STATS_FD included, only
// to the process whose memory the VM maps (virt/kvm/kvm_main.c kvm_vm_ioctl/kvm_vcpu_ioctl: EIO to
// any other), but a stats fd, once the VMM has one, is read with plain pread. So root duplicates the
// stats fds the VMM holds (pidfd_open + pidfd_getfd, Linux >= 5.6), found among /proc/<pid>/fd by
// their links `anon_inode:kvm-vm-stats` and `anon_inode:kvm-vcpu-stats:N` (next to the VM's
// `anon_inode:kvm-vm` and vCPUs' `anon_inode:kvm-vcpu:N`).
// In: a stats fd, or a VMM's pid. Out: named values; per VM its cumulative counters summed over its
// vCPUs plus each vCPU's own.
// Assumption: the layout is read from the header and descriptors every time (never assumed); a
// duplicated fd is closed right after it is read (a stats fd holds a reference on its VM).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "observe/kvm_debugfs_stats.h"

namespace exitscope {

struct KvmStatDesc {
  std::string name;
  uint32_t flags = 0;  // KVM_STATS_TYPE_* | KVM_STATS_UNIT_* | KVM_STATS_BASE_* (linux/kvm.h)
  int16_t exponent = 0;
  std::vector<uint64_t> values;  // desc.size u64s
};

struct KvmStatsFile {
  std::string id;  // e.g. "kvm-1234/vcpu-0"
  std::vector<KvmStatDesc> stats;
};

// Parses a stats file through pread (a KVM stats fd, or any file laid out the same). 65 on a header,
// descriptor or data block that does not fit (bounded: at most 4096 stats of names up to 4 KiB).
Result<KvmStatsFile> ReadKvmStatsFile(int fd);

// The cumulative one-value stats (type KVM_STATS_TYPE_CUMULATIVE, size 1), by name: the ones that
// debugfs shows as a growing number (exits, halt_exits, halt_wait_ns …).
std::map<std::string, uint64_t> CumulativeCounters(const KvmStatsFile& f);

// What a /proc/<pid>/fd link names: a VM or vCPU N (vcpu -1: the VM), or the stats fd of either;
// nullopt for anything else.
struct KvmFdKind {
  bool stats = false;
  int vcpu = -1;
};
std::optional<KvmFdKind> ParseKvmFdLink(std::string_view link);

struct KvmProcessFds {
  int pid = 0;
  std::vector<int> vm_fds, vm_stats_fds;
  std::map<int, int> vcpu_fds, vcpu_stats_fds;  // vCPU id -> fd
};
// The kvm fds of a process, from its /proc/<pid>/fd links.
KvmProcessFds FindKvmFds(const std::string& proc_root, int pid);

// One VM read through the stats fds its VMM holds: counters = the VM's own cumulative stats (when
// the VMM holds its stats fd) + the sum of its vCPUs' (as debugfs sums them), vcpus = each vCPU's;
// source "stats-fd". 69 with the reason when they cannot be reached: a vCPU without a stats fd in
// the VMM (the sum would be partial), a process with more than one VM, no pidfd_getfd, no privilege.
Result<KvmVmCounters> ReadVmStatsByFd(const std::string& proc_root, int pid);

// Every VM of this host with its counters: through the stats fds where they can be reached, else
// debugfs (source says which per VM). `why_not_fd` gets the first reason a VM fell back, if any.
// `fd_pids` (kept by the caller across reads): the VMMs read through stats fds before; one that no
// longer holds them is left out for a few reads (closing its VM) before debugfs is read for it.
// 69 when neither works (no VM fd reachable and no debugfs).
struct KvmStatsReadOptions {
  std::string debugfs = kKvmDebugfsDir;
  std::string proc_root = "/proc";
  bool use_fd = true;  // false: debugfs only
};
Result<std::vector<KvmVmCounters>> ReadKvmStats(const KvmStatsReadOptions& o, std::string* why_not_fd = nullptr,
                                                std::map<int, int>* fd_pids = nullptr);

}  // namespace exitscope
