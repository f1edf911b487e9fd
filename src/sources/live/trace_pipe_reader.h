// Drains the ring buffer of a tracefs instance page by page (per_cpu/cpuN/trace_pipe_raw), the
// way trace-cmd's recorder does, and accounts for every loss the kernel reports: the missed-events
// flag/count in each page header and the per-CPU stats file (overrun, dropped events).
// In: an instance with tracing on. Out: whole pages (page_size bytes, as the kernel laid them out)
// handed to a sink with their CPU; per-CPU loss figures. Never blocks longer than the poll timeout.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "sources/live/tracefs_instance.h"
#include "base/result.h"

namespace exitscope {

// The header of one ring-buffer page (kernel/trace/ring_buffer.c struct buffer_data_page:
// u64 time_stamp; local_t commit; data[]).
struct RingPageHeader {
  uint64_t ts = 0;            // the page's base timestamp
  uint32_t data_bytes = 0;    // bytes of events after the header
  bool missed = false;        // events were lost before this page (RB_MISSED_EVENTS)
  uint64_t missed_count = 0;  // how many, when the kernel stored the count (RB_MISSED_STORED)
};
// A page of `long_size`-byte longs (8 on x86-64).
RingPageHeader ParseRingPageHeader(std::span<const uint8_t> page, uint32_t long_size = 8);
// Offset of the first event in a page (after u64 time_stamp and local_t commit).
inline constexpr uint32_t RingPageDataOffset(uint32_t long_size = 8) { return 8 + long_size; }

struct CpuLoss {
  uint64_t pages = 0;
  uint64_t pages_with_missed = 0;  // pages flagged RB_MISSED_EVENTS
  uint64_t missed_events = 0;      // sum of the counts stored in flagged pages
  uint64_t overrun = 0;            // stats: events overwritten before we read them
  uint64_t dropped = 0;            // stats: events dropped (ring full, no-overwrite mode)
  uint64_t commit_overrun = 0;     // stats: events dropped when nested writers filled the buffer
  uint64_t entries = 0;            // stats: events still in the buffer when read
  uint64_t unread = 0;             // entries left after the final drain (set by the recorder)
  uint64_t Lost() const { return std::max(missed_events, overrun) + dropped + commit_overrun + unread; }
};

// Parses a per_cpu/cpuN/stats text into `loss` (overrun, dropped events, entries).
void ParseCpuStats(const std::string& text, CpuLoss* loss);

class TracePipeReader {
 public:
  using Sink = std::function<Status(int cpu, std::span<const uint8_t> page)>;
  ~TracePipeReader();
  static Result<std::unique_ptr<TracePipeReader>> Open(const TracefsInstance& instance);
  // Waits up to timeout_ms for a CPU's buffer to fill (the kernel wakes readers at buffer_percent),
  // then hands the ready CPUs' pages to `sink`. A signal ends the wait early. Returns pages read.
  Result<uint64_t> Poll(int timeout_ms, const Sink& sink);
  // Reads everything there is on every CPU, partial pages included (after tracing_on=0, or at a
  // `top` refresh).
  Result<uint64_t> Drain(const Sink& sink) { return ReadReady(sink); }
  // Re-reads the stats files into the loss figures; call after Drain.
  void UpdateStats();
  const std::vector<CpuLoss>& loss() const { return loss_; }
  const std::vector<std::string>& stats_text() const { return stats_text_; }
  uint32_t page_size() const { return page_size_; }

 private:
  TracePipeReader() = default;
  Result<uint64_t> ReadReady(const Sink& sink, const std::vector<bool>* only = nullptr);

  const TracefsInstance* instance_ = nullptr;
  std::vector<int> fds_;
  std::vector<CpuLoss> loss_;
  std::vector<std::string> stats_text_;
  std::vector<uint8_t> page_;
  uint32_t page_size_ = 4096;
};

}  // namespace exitscope
