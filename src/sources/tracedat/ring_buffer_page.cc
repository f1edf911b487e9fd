#include "sources/tracedat/ring_buffer_page.h"

#include <algorithm>

#include "format/event_format.h"

namespace exitscope {

PageLayout PageLayout::FromHeaderPage(std::string_view text) {
  PageLayout layout;
  // header_page reads like a format's field block; reuse the format parser on it.
  std::string wrapped = "name: header_page\nID: 0\nformat:\n" + std::string(text);
  auto parsed = ParseEventFormat(wrapped, "header_page");
  if (!parsed.ok()) return layout;
  auto bind = [&](std::string_view name, uint32_t* offset, uint32_t* size) {
    if (const FieldFormat* f = parsed->Field(name)) {
      *offset = f->offset;
      if (size) *size = f->size;
    }
  };
  bind("timestamp", &layout.ts_offset, &layout.ts_size);
  bind("commit", &layout.commit_offset, &layout.commit_size);
  bind("data", &layout.data_offset, nullptr);
  return layout;
}

void RingBufferStats::Report(Diagnostics* d) const {
  if (truncated_pages) d->Bump(DiagId::kTracedatTruncatedPage, truncated_pages);
  if (bad_lengths) d->Bump(DiagId::kTracedatBadRecordLength, bad_lengths);
  if (missed_events) d->Bump(DiagId::kTracedatMissedEvents, missed_events);
  if (missed_unknown) d->Bump(DiagId::kTracedatMissedEventsUnknown, missed_unknown);
  if (ts_backwards) d->Bump(DiagId::kTracedatTimestampBackwards, ts_backwards);
  if (zeroed_pages) d->Bump(DiagId::kTracedatZeroedPage, zeroed_pages);
}

bool PageWalker::Begin(std::span<const uint8_t> page, const PageLayout& layout, RingBufferStats* stats,
                       uint64_t* missed) {
  stats_ = stats;
  ++stats->pages;
  *missed = 0;
  p_ = end_ = page.data();
  if (layout.data_offset > page.size() || uint64_t{layout.ts_offset} + layout.ts_size > page.size() ||
      uint64_t{layout.commit_offset} + layout.commit_size > page.size()) {
    ++stats->truncated_pages;
    return false;
  }
  page_ts_ = ts_ = LoadLe(page.data() + layout.ts_offset, layout.ts_size);
  uint64_t commit = LoadLe(page.data() + layout.commit_offset, layout.commit_size);
  if (page_ts_ == 0 && commit == 0 && std::all_of(page.begin(), page.end(), [](uint8_t b) { return b == 0; })) {
    ++stats->zeroed_pages;  // its records (if the page held any) are gone, unlike an empty page's
    return false;
  }
  uint64_t size = commit & kCommitMask;
  uint64_t room = page.size() - layout.data_offset;
  if (size > room) {
    ++stats->truncated_pages;
    size = room;
  }
  const uint8_t* data = page.data() + layout.data_offset;
  if (commit & kMissedEventsFlag) {
    // With RB_MISSED_STORED the kernel wrote the count as a long right after the data.
    if ((commit & kMissedStoredFlag) && size + layout.commit_size <= room) {
      *missed = LoadLe(data + size, layout.commit_size);
      stats->missed_events += *missed;
    } else {
      *missed = ~0ull;
      ++stats->missed_unknown;
    }
  }
  p_ = data;
  end_ = data + size;
  return size > 0;
}

}  // namespace exitscope
