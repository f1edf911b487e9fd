// Walks one ftrace ring-buffer page (a "sub-buffer"): the page header (timestamp, commit with the
// missed-events flag bits) laid out as the trace's own header_page text says, then the records:
// 4-byte event headers {type_len:5, time_delta:27}, padding, time extends, absolute time stamps and
// data records. In: the page bytes. Out: data records {raw ts, payload}; anomalies as plain counts
// in RingBufferStats (the reader turns them into Diagnostics once per file). Never reads past the
// page or its commit. Assumption: little-endian kernel (x86).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "model/diagnostics.h"
#include "base/byte_reader.h"

namespace exitscope {

// include/linux/ring_buffer.h (kernel 2.6.31+): type_len values above the data range.
inline constexpr uint32_t kTypeLenDataMax = 28;  // RINGBUF_TYPE_DATA_TYPE_LEN_MAX
inline constexpr uint32_t kTypePadding = 29;     // RINGBUF_TYPE_PADDING
inline constexpr uint32_t kTypeTimeExtend = 30;  // RINGBUF_TYPE_TIME_EXTEND
inline constexpr uint32_t kTypeTimeStamp = 31;   // RINGBUF_TYPE_TIME_STAMP (absolute, 5.2+)
inline constexpr uint32_t kTsShift = 27;         // kernel/trace/ring_buffer.c TS_SHIFT
inline constexpr uint32_t kEventHeaderSize = 4;  // RB_EVNT_HDR_SIZE
// kernel/trace/ring_buffer.c: commit flag bits; libtraceevent masks the size with 27 bits.
inline constexpr uint64_t kMissedEventsFlag = 1ull << 31;  // RB_MISSED_EVENTS
inline constexpr uint64_t kMissedStoredFlag = 1ull << 30;  // RB_MISSED_STORED (count after data)
inline constexpr uint64_t kCommitMask = (1ull << 27) - 1;
// An absolute time stamp holds only the low 59 bits; the top 5 come from the running time
// (kernel/trace/ring_buffer.c rb_fix_abs_ts, 5.16+).
inline constexpr uint64_t kAbsTsMsbMask = 0xf8ull << 56;

// Where the page header fields are, bound by name from events/header_page.
struct PageLayout {
  uint32_t ts_offset = 0, ts_size = 8;
  uint32_t commit_offset = 8, commit_size = 8;
  uint32_t data_offset = 16;
  // Falls back to the x86-64 layout above for any field the text lacks.
  static PageLayout FromHeaderPage(std::string_view header_page_text);
};

struct RingBufferStats {
  uint64_t pages = 0;
  uint64_t truncated_pages = 0;  // commit beyond the page, or a record running past the commit
  uint64_t bad_lengths = 0;      // a record whose length is impossible (0-length type_len 0 …)
  uint64_t missed_events = 0;    // events the kernel reported lost (stored counts)
  uint64_t missed_unknown = 0;   // pages flagged "events missed" without a count
  uint64_t ts_backwards = 0;     // a page starting before the previous page's last event
  uint64_t zeroed_pages = 0;     // all zero bytes: no kernel page is (its stamp is never 0)
  void Report(Diagnostics* d) const;
  void Add(const RingBufferStats& o) {
    pages += o.pages;
    truncated_pages += o.truncated_pages;
    bad_lengths += o.bad_lengths;
    missed_events += o.missed_events;
    missed_unknown += o.missed_unknown;
    ts_backwards += o.ts_backwards;
    zeroed_pages += o.zeroed_pages;
  }
};

struct PageRecord {
  uint64_t ts = 0;                   // raw clock units of the trace clock
  std::span<const uint8_t> payload;  // starts at common_type
};

class PageWalker {
 public:
  // Starts a page. Returns false (after counting why) when the page has no usable records.
  // `missed` receives the number of events lost before this page (~0ull = unknown, 0 = none).
  bool Begin(std::span<const uint8_t> page, const PageLayout& layout, RingBufferStats* stats, uint64_t* missed);

  // Next data record of the page; false at the page's end.
  inline bool Next(PageRecord* out);

  uint64_t page_ts() const { return page_ts_; }

 private:
  const uint8_t* p_ = nullptr;
  const uint8_t* end_ = nullptr;
  uint64_t ts_ = 0, page_ts_ = 0;
  RingBufferStats* stats_ = nullptr;
};

inline bool PageWalker::Next(PageRecord* out) {
  while (end_ - p_ >= static_cast<ptrdiff_t>(kEventHeaderSize)) {
    uint32_t header = static_cast<uint32_t>(LoadLe(p_, 4));
    uint32_t type_len = header & 0x1f;
    uint32_t delta = header >> 5;
    const uint8_t* body = p_ + kEventHeaderSize;
    ptrdiff_t avail = end_ - body;
    if (type_len >= 1 && type_len <= kTypeLenDataMax) {
      uint32_t len = type_len * 4;
      if (len > avail) break;
      ts_ += delta;
      p_ = body + len;
      out->ts = ts_;
      out->payload = {body, len};
      return true;
    }
    if (type_len == kTypePadding && delta == 0) {
      p_ = end_;
      return false;
    }  // null event: page ends
    if (avail < 4) break;
    uint32_t word = static_cast<uint32_t>(LoadLe(body, 4));
    switch (type_len) {
      case 0: {  // large record: array[0] = payload length + 4
        if (word < 4 + 2) {
          ++stats_->bad_lengths;
          p_ = end_;
          return false;
        }
        uint32_t len = ((word - 4) + 3) & ~3u;
        if (len > avail - 4) {
          ++stats_->truncated_pages;
          p_ = end_;
          return false;
        }
        ts_ += delta;
        p_ = body + 4 + len;
        out->ts = ts_;
        out->payload = {body + 4, word - 4};
        return true;
      }
      case kTypePadding:
        // A discarded record; its delta still counts (the writer's stamp moved past it).
        ts_ += delta;
        if (word > avail) {
          ++stats_->truncated_pages;
          p_ = end_;
          return false;
        }
        p_ = body + word;
        continue;
      case kTypeTimeExtend:
        ts_ += (static_cast<uint64_t>(word) << kTsShift) + delta;
        p_ = body + 4;
        continue;
      case kTypeTimeStamp: {
        uint64_t abs = (static_cast<uint64_t>(word) << kTsShift) + delta;
        ts_ = abs | (ts_ & kAbsTsMsbMask);
        p_ = body + 4;
        continue;
      }
    }
  }
  if (p_ < end_) ++stats_->truncated_pages;
  p_ = end_;
  return false;
}

}  // namespace exitscope
