// SPDX-License-Identifier: GPL-2.0
// In-kernel exit counter for `top --mode bpf` and `bench --observe bpf`: on kvm:kvm_exit it notes
// the time and reason per thread, on kvm:kvm_entry it adds the handling time to a per-CPU map keyed by
// (process, thread, reason, isa); kvm:kvm_userspace_exit counts trips to the VMM. Nothing is sent to
// userspace per event: the reader sums the per-CPU maps once per interval.
// Field offsets come from the running kernel's tracefs `format` files, written into .rodata before
// load (observe/bpf_exit_reader.cc), so neither the build nor the host needs vmlinux BTF: kvm_exit has
// moved fields across kernels (vcpu_id, requests), and on newer kernels a raw tracepoint's first
// argument is the vcpu pointer, not the reason, which is why this uses the classic tracepoint record.
#include <linux/bpf.h>
#include <linux/types.h>
#include <bpf/bpf_helpers.h>

#include "observe/bpf_exit_abi.h"

char LICENSE[] SEC("license") = "GPL";  // bpf_probe_read_kernel is GPL-only

// Set by the loader from events/kvm/kvm_exit/format; an offset of 0 means "absent" (0 is common_type).
const volatile __u32 exit_reason_off = 0;
const volatile __u32 exit_isa_off = 0;
const volatile __u32 exit_vcpu_off = 0;
const volatile __u32 target_tgid = 0;  // 0: every process

struct inflight {
  __u64 ts_ns;
  __u32 reason;
  __u32 isa;
};

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 8192);
  __type(key, __u32);  // thread id
  __type(value, struct inflight);
} inflight SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, 16384);
  __type(key, struct exitscope_bpf_key);
  __type(value, struct exitscope_bpf_stats);
} exit_stats SEC(".maps");

static __always_inline struct exitscope_bpf_stats* stats_of(const struct exitscope_bpf_key* key) {
  struct exitscope_bpf_stats* s = bpf_map_lookup_elem(&exit_stats, key);
  if (s) return s;
  static const struct exitscope_bpf_stats zero;
  bpf_map_update_elem(&exit_stats, key, &zero, BPF_NOEXIST);
  return bpf_map_lookup_elem(&exit_stats, key);
}

static __always_inline __u32 log2_bucket(__u64 v) {
  __u32 r = 0;
  if (v >> 32) { v >>= 32; r += 32; }
  if (v >> 16) { v >>= 16; r += 16; }
  if (v >> 8) { v >>= 8; r += 8; }
  if (v >> 4) { v >>= 4; r += 4; }
  if (v >> 2) { v >>= 2; r += 2; }
  if (v >> 1) r += 1;
  return r < EXITSCOPE_BPF_HIST_BUCKETS ? r : EXITSCOPE_BPF_HIST_BUCKETS - 1;
}

static __always_inline __u32 read_u32(void* ctx, __u32 off) {
  __u32 v = 0;
  if (off) bpf_probe_read_kernel(&v, sizeof(v), (char*)ctx + off);
  return v;
}

SEC("tracepoint/kvm/kvm_exit")
int on_kvm_exit(void* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32, tid = (__u32)id;
  if (target_tgid && tgid != target_tgid) return 0;
  struct inflight f = {};
  f.ts_ns = bpf_ktime_get_ns();
  f.reason = read_u32(ctx, exit_reason_off);
  f.isa = read_u32(ctx, exit_isa_off);
  struct exitscope_bpf_key key = {.tgid = tgid, .tid = tid, .reason = f.reason, .isa = f.isa};
  struct exitscope_bpf_stats* s = stats_of(&key);
  if (!s) return 0;
  s->exits++;
  if (exit_vcpu_off) s->vcpu_id1 = (__u64)read_u32(ctx, exit_vcpu_off) + 1;
  bpf_map_update_elem(&inflight, &tid, &f, BPF_ANY);
  return 0;
}

SEC("tracepoint/kvm/kvm_entry")
int on_kvm_entry(void* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32, tid = (__u32)id;
  struct inflight* f = bpf_map_lookup_elem(&inflight, &tid);
  if (!f) return 0;
  __u64 dur = bpf_ktime_get_ns() - f->ts_ns;
  struct exitscope_bpf_key key = {.tgid = tgid, .tid = tid, .reason = f->reason, .isa = f->isa};
  bpf_map_delete_elem(&inflight, &tid);
  struct exitscope_bpf_stats* s = stats_of(&key);
  if (!s) return 0;
  s->timed++;
  s->total_ns += dur;
  __u32 b = log2_bucket(dur);
  if (b < EXITSCOPE_BPF_HIST_BUCKETS) s->hist[b]++;
  return 0;
}

SEC("tracepoint/kvm/kvm_userspace_exit")
int on_kvm_userspace_exit(void* ctx) {
  __u64 id = bpf_get_current_pid_tgid();
  __u32 tgid = id >> 32, tid = (__u32)id;
  struct inflight* f = bpf_map_lookup_elem(&inflight, &tid);
  if (!f) return 0;
  struct exitscope_bpf_key key = {.tgid = tgid, .tid = tid, .reason = f->reason, .isa = f->isa};
  struct exitscope_bpf_stats* s = stats_of(&key);
  if (s) s->userspace++;
  return 0;
}
