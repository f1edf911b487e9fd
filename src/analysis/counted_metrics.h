// Cumulative per-VM series of the observers that count instead of trace, for `serve --mode bpf` and
// `serve --mode stats`: what the in-kernel counter gives per (domain, reason) — exits, timed exits
// and their kvm_exit -> kvm_entry time, trips to the VMM, log2 buckets — and KVM's own counters per
// domain (and per vCPU where its stats fds were read). In: deltas added by the observe/ feeds.
// Out: the series report/openmetrics_reporter renders. Assumption: as ExitMetrics, counters only
// grow (deltas are added, never snapshots set), a VM is known by its domain name and keeps its
// series for a grace period after its process is gone.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace exitscope {

// log2 buckets of handling time as the in-kernel counter keeps them: bucket b holds integer
// nanoseconds in [2^b, 2^(b+1)) (bucket 0 also 0 ns), the last one everything from 2^(kLog2Buckets-1).
inline constexpr size_t kLog2Buckets = 30;

struct Log2ReasonMetrics {
  uint64_t exits = 0;      // every kvm_exit
  uint64_t timed = 0;      // of those, followed by a kvm_entry of the same thread
  uint64_t timed_ns = 0;   // kvm_exit -> kvm_entry of the timed ones (a halted vCPU's wait included)
  uint64_t vmm_trips = 0;  // kvm_userspace_exit during an exit's handling
  std::array<uint64_t, kLog2Buckets> buckets{};
};

struct Log2DomainMetrics {
  std::string uuid, vmm;
  std::map<std::string, Log2ReasonMetrics> reasons;
  std::map<int32_t, uint64_t> vcpu_exits;  // -1: unknown
  uint64_t gone_since_ns = 0;
};

struct KvmStatDomain {
  std::string uuid, vmm;
  std::string source;                                        // of the last read: "stats-fd" or "debugfs"
  std::map<std::string, uint64_t> counters;                  // KVM's cumulative stats, summed over vCPUs
  std::map<int32_t, std::map<std::string, uint64_t>> vcpus;  // stats-fd only
  uint64_t gone_since_ns = 0;
};

// Drops the domains gone longer than `grace_ns`, marks the newly gone (shared by both kinds).
template <typename Domain>
void PruneDomains(std::map<std::string, Domain>* domains, const std::set<std::string>& alive, uint64_t now_ns,
                  uint64_t grace_ns) {
  for (auto it = domains->begin(); it != domains->end();) {
    Domain& d = it->second;
    if (alive.count(it->first)) {
      d.gone_since_ns = 0;
    } else if (d.gone_since_ns == 0) {
      d.gone_since_ns = now_ns;
    } else if (now_ns - d.gone_since_ns >= grace_ns) {
      it = domains->erase(it);
      continue;
    }
    ++it;
  }
}

// What `serve --mode bpf` exports.
struct Log2ExitMetrics {
  std::map<std::string, Log2DomainMetrics> domains;
};

// What `serve --mode stats` exports.
struct KvmStatMetrics {
  std::map<std::string, KvmStatDomain> domains;
};

}  // namespace exitscope
