// Turns the ring-buffer pages that `top` read from its tracefs instance in one interval into typed
// KvmEvents in time order, reusing the trace.dat path's pieces: the page walker (with the
// instance's header_page layout), the per-CPU merger and the kvm decoder bound to the running
// kernel's own event formats. Loss markers (a page flagged "missed events") come out in order too.
// In: AddPage(cpu, page) during the interval. Out: Flush() calls on_event / on_lost.
// Assumption: the instance uses a nanosecond clock (local, the default; we never change it).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "format/event_format.h"
#include "decode/kvm_decoder.h"
#include "sources/live/tracefs_instance.h"
#include "model/trace_meta.h"
#include "sources/tracedat/ring_buffer_page.h"

namespace exitscope {

class LivePageDecoder {
 public:
  static Result<std::unique_ptr<LivePageDecoder>> Create(const TracefsInstance& instance, Diagnostics* diagnostics);
  void AddPage(int cpu, std::span<const uint8_t> page);
  void Flush(const std::function<void(const KvmEvent&)>& on_event,
             const std::function<void(const LostEvents&)>& on_lost);
  const TraceMeta& meta() const { return meta_; }
  RingBufferStats& page_stats() { return stats_; }

 private:
  LivePageDecoder() = default;
  FormatRegistry formats_;
  TraceMeta meta_;
  PageLayout layout_;
  RingBufferStats stats_;
  std::unique_ptr<KvmDecoder> decoder_;
  Diagnostics* diagnostics_ = nullptr;
  uint32_t page_size_ = 4096;
  uint32_t pid_offset_ = 4, pid_size_ = 4;   // common_pid, bound from the formats
  std::vector<std::vector<uint8_t>> pages_;  // per CPU, this interval
};

// The host CPU vendor's virtualization ISA (/proc/cpuinfo vendor_id), for kernels whose kvm_exit
// lacks the isa field.
Isa HostIsa();

}  // namespace exitscope
