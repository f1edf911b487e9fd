#include "analysis/exit_bins.h"

#include <bit>
#include <fmt/format.h>

namespace exitscope {

uint32_t ExitBinner::LatencyBucket(uint64_t ns) {
  if (ns < kBucketsPerOctave) return static_cast<uint32_t>(ns);
  const int msb = 63 - std::countl_zero(ns);
  const uint32_t sub = static_cast<uint32_t>((ns >> (msb - 2)) & 3);
  return static_cast<uint32_t>(msb - 1) * kBucketsPerOctave + sub;
}

uint64_t ExitBinner::LatencyBucketLow(uint32_t bucket) {
  if (bucket < kBucketsPerOctave) return bucket;
  const int msb = static_cast<int>(bucket / kBucketsPerOctave) + 1;
  return (uint64_t{kBucketsPerOctave} + bucket % kBucketsPerOctave) << (msb - 2);
}

uint64_t ExitBinner::LatencyBucketHigh(uint32_t bucket) {
  if (bucket < kBucketsPerOctave) return bucket + 1;
  return bucket + 1 >= 64 * kBucketsPerOctave ? UINT64_MAX : LatencyBucketLow(bucket + 1);
}

void ExitBinner::Add(const ExitSample& s, bool timed) {
  if (s.tid != cached_tid_ || !cached_) {
    int32_t row = s.tid;
    if (!threads_.count(row) && threads_.size() >= kMaxThreads) row = kOtherThreads;
    cached_ = &threads_[row];
    cached_->tid = row;
    cached_tid_ = s.tid;
    cached_cell_ = nullptr;
  }
  Thread& t = *cached_;
  if (s.vcpu_id >= 0) t.vcpu_id = s.vcpu_id;
  const uint64_t key = (static_cast<uint64_t>(s.isa) << 32) | s.reason;
  if (key != cached_key_ || !cached_cell_) {  // map nodes stay put: the pointers stay valid
    cached_cell_ = &t.reasons[key];
    cached_hist_ = &reason_hist_[key];
    cached_key_ = key;
  }
  Cell& c = *cached_cell_;
  const uint64_t since = s.ts_ns > origin_ns_ ? s.ts_ns - origin_ns_ : 0;
  while (since / bin_ns_ >= kMaxTimeBins) Coarsen();
  const size_t bin = since / bin_ns_;
  if (c.bins.size() <= bin) c.bins.resize(bin + 1);
  ++c.bins[bin];
  bins_used_ = std::max(bins_used_, bin + 1);
  ++c.exits;
  if (!timed) return;
  const uint64_t ns = s.handling_ns();
  ++c.timed;
  c.handling_ns += ns;
  c.blocked_ns += s.blocked_ns;
  if (s.to_userspace) {
    ++c.vmm_exits;
    c.vmm_ns += ns;
  }
  ++c.latency[LatencyBucket(ns)];
  cached_hist_->Add(ns);
}

void ExitBinner::Coarsen() {
  bin_ns_ *= 2;
  bins_used_ = (bins_used_ + 1) / 2;
  for (auto& [tid, t] : threads_) {
    for (auto& [key, c] : t.reasons) {
      std::vector<uint32_t> merged((c.bins.size() + 1) / 2);
      for (size_t i = 0; i < c.bins.size(); ++i) merged[i / 2] += c.bins[i];
      c.bins = std::move(merged);
    }
  }
}

std::string ExitBinner::VcpuLabel(const Thread& t) const {
  if (t.tid == kOtherThreads) return "other-threads";
  auto index = vms_.VcpuIndex(t.tid, t.vcpu_id);
  return index ? fmt::format("vcpu{}", *index) : fmt::format("tid-{}", t.tid);
}

std::string ExitBinner::VmLabel(const Thread& t) const {
  return t.tid == kOtherThreads ? "other-threads" : vms_.FrameLabel(t.tid);
}

int64_t ExitBinner::VmId(const Thread& t) const { return t.tid == kOtherThreads ? -1 : vms_.VmId(t.tid); }

}  // namespace exitscope
