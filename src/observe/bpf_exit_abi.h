// The records shared by the in-kernel exit counter (bpf/kvm_exits.bpf.c) and its reader
// (observe/bpf_exit_reader.cc): the per-CPU map's key and value. Plain C, fixed-width fields only, so
// the BPF target and the host compiler lay them out alike.
// Assumption: both sides are built from this one header (the skeleton embeds the object at build time).
#pragma once

#include <linux/types.h>

// log2 buckets of handling time: bucket b holds [2^b, 2^(b+1)) ns, bucket 0 also 0 ns; the last one
// everything from 2^(kBpfHistBuckets-1) ns (~0.5 s) up.
#define EXITSCOPE_BPF_HIST_BUCKETS 30

// What the kernel program aggregates by: VM process, vCPU thread, exit reason and ISA.
struct exitscope_bpf_key {
  __u32 tgid;
  __u32 tid;
  __u32 reason;  // kvm_exit's exit_reason field, as recorded
  __u32 isa;     // kvm_exit's isa field (1 VMX, 2 SVM: KVM_ISA_* in arch/x86/kvm/trace.h), 0 absent
};

// One CPU's share of a key's counts (a BPF_MAP_TYPE_PERCPU_HASH value; the reader sums the CPUs).
struct exitscope_bpf_stats {
  __u64 exits;      // kvm_exit events
  __u64 timed;      // of those, followed by a kvm_entry of the same thread
  __u64 total_ns;   // sum of kvm_exit -> kvm_entry over the timed ones
  __u64 userspace;  // kvm_userspace_exit while the exit was being handled: trips to the VMM
  __u64 vcpu_id1;   // kvm_exit's vcpu_id + 1 (0: the field is absent)
  __u64 hist[EXITSCOPE_BPF_HIST_BUCKETS];
};
