// Exits binned over time and by handling time, per vCPU thread and exit reason: what the HTML
// report draws (exits/s heatmap, latency distributions) and the timeline's exits/s counters.
// In: the ExitSamples a report accepted (report_pipeline.h ReportTaps), the trace's origin. Out: per
// (thread, reason) a count per time bin and per latency bucket, a LogHistogram per reason (the
// report's class, so its percentiles equal the report's), the threads' VM and vCPU labels.
// Assumption: memory flat in trace length: at most kMaxTimeBins bins, whose width doubles (adjacent
// bins merged) whenever the trace outgrows them; at most kMaxThreads threads apart, the rest in one row.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/exit_pairer.h"
#include "analysis/log_histogram.h"
#include "analysis/vm_grouper.h"

namespace exitscope {

class ExitBinner : public ExitSampleSink {
 public:
  static constexpr size_t kMaxTimeBins = 512;
  static constexpr uint64_t kFirstBinNs = 1'000'000;  // 1 ms, doubled as the trace goes on
  static constexpr size_t kMaxThreads = 512;
  static constexpr int32_t kOtherThreads = -1;  // the row of threads past kMaxThreads
  // Latency buckets: 4 per power of two (the top two bits below the leading one).
  static constexpr int kBucketsPerOctave = 4;
  static uint32_t LatencyBucket(uint64_t ns);
  static uint64_t LatencyBucketLow(uint32_t bucket);   // inclusive
  static uint64_t LatencyBucketHigh(uint32_t bucket);  // exclusive

  explicit ExitBinner(const TraceMeta& meta) : vms_(meta) {}
  void SetOrigin(uint64_t first_ts_ns) { origin_ns_ = first_ts_ns; }
  void OnExitSample(const ExitSample& s) override { Add(s, true); }
  void OnUntimedExit(const ExitSample& s) override { Add(s, false); }

  struct Cell {  // one (thread, reason)
    uint64_t exits = 0, timed = 0, handling_ns = 0, blocked_ns = 0, vmm_exits = 0, vmm_ns = 0;
    std::vector<uint32_t> bins;            // exits (timed or not) per time bin, by kvm_exit time
    std::map<uint32_t, uint64_t> latency;  // LatencyBucket -> timed exits
  };
  struct Thread {
    int32_t tid = 0;
    int32_t vcpu_id = -1;              // the kernel's, when the trace has it
    std::map<uint64_t, Cell> reasons;  // key: isa << 32 | raw reason
  };

  uint64_t origin_ns() const { return origin_ns_; }
  uint64_t bin_ns() const { return bin_ns_; }
  size_t bins_used() const { return bins_used_; }
  const std::map<int32_t, Thread>& threads() const { return threads_; }
  const std::map<uint64_t, LogHistogram>& reason_histograms() const { return reason_hist_; }
  const VmGrouper& vms() const { return vms_; }
  // "vcpu0" (VmGrouper's index), else "tid-<tid>"; the flame graph's frames name vCPUs alike.
  std::string VcpuLabel(const Thread& t) const;
  std::string VmLabel(const Thread& t) const;  // VmGrouper::FrameLabel
  int64_t VmId(const Thread& t) const;

 private:
  void Add(const ExitSample& s, bool timed);
  void Coarsen();  // bin_ns_ doubles, adjacent bins of every cell merged

  VmGrouper vms_;
  uint64_t origin_ns_ = 0;
  uint64_t bin_ns_ = kFirstBinNs;
  size_t bins_used_ = 0;
  std::map<int32_t, Thread> threads_;
  std::map<uint64_t, LogHistogram> reason_hist_;
  // The last exit's thread and (thread, reason) cell: exits come in runs of one thread.
  int32_t cached_tid_ = INT32_MIN;
  Thread* cached_ = nullptr;
  uint64_t cached_key_ = 0;
  Cell* cached_cell_ = nullptr;
  LogHistogram* cached_hist_ = nullptr;
};

}  // namespace exitscope
