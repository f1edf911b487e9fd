#include "pipeline/live_page_decoder.h"

#include <fstream>
#include <string>

#include "format/tracing_data.h"
#include "sort/cpu_merger.h"

namespace exitscope {
namespace {

// One CPU's pages of the interval as a time-ordered record stream for the merger.
class PagesStream : public CpuRecordStream {
 public:
  PagesStream(int cpu, const std::vector<uint8_t>& pages, uint32_t page_size, const PageLayout& layout,
              RingBufferStats* stats, uint32_t pid_offset, uint32_t pid_size)
      : cpu_(cpu),
        pages_(pages),
        page_size_(page_size),
        layout_(layout),
        stats_(stats),
        pid_offset_(pid_offset),
        pid_size_(pid_size) {}

  bool Advance() override {
    lost.cpu = -1;
    PageRecord rec;
    while (!started_ || !walker_.Next(&rec)) {
      if (pos_ + page_size_ > pages_.size()) return false;
      std::span<const uint8_t> page(pages_.data() + pos_, page_size_);
      pos_ += page_size_;
      started_ = true;
      uint64_t missed = 0;
      walker_.Begin(page, layout_, stats_, &missed);
      if (missed) {
        lost.cpu = cpu_;
        lost.ts_ns = walker_.page_ts();
        lost.count = missed == ~0ull ? 0 : missed;
      }
    }
    head.ts_ns = rec.ts;
    head.cpu = cpu_;
    head.payload = rec.payload;
    head.type_id = rec.payload.size() >= 2 ? static_cast<uint16_t>(LoadLe(rec.payload.data(), 2)) : 0;
    head.tid = rec.payload.size() >= uint64_t{pid_offset_} + pid_size_
                   ? static_cast<int32_t>(LoadLe(rec.payload.data() + pid_offset_, pid_size_))
                   : -1;
    return true;
  }

 private:
  int cpu_;
  const std::vector<uint8_t>& pages_;
  uint32_t page_size_;
  const PageLayout& layout_;
  RingBufferStats* stats_;
  uint32_t pid_offset_, pid_size_;
  PageWalker walker_;
  size_t pos_ = 0;
  bool started_ = false;
};

}  // namespace

Isa HostIsa() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("vendor_id", 0) != 0) continue;
    if (line.find("GenuineIntel") != std::string::npos) return Isa::kVmx;
    if (line.find("AuthenticAMD") != std::string::npos || line.find("HygonGenuine") != std::string::npos) {
      return Isa::kSvm;
    }
    break;
  }
  return Isa::kUnknown;
}

Result<std::unique_ptr<LivePageDecoder>> LivePageDecoder::Create(const TracefsInstance& instance,
                                                                 Diagnostics* diagnostics) {
  std::unique_ptr<LivePageDecoder> d(new LivePageDecoder());
  d->diagnostics_ = diagnostics;
  d->page_size_ = instance.page_size();
  auto hp = instance.Read("events/header_page", true);
  if (!hp.ok()) return hp.error();
  d->layout_ = PageLayout::FromHeaderPage(*hp);
  for (const auto& e : instance.events()) {
    auto f = ParseEventFormat(e.format, e.system);
    if (!f.ok()) {
      diagnostics->Bump(DiagId::kFormatUnparsable);
      continue;
    }
    if (const FieldFormat* pid = f->Field("common_pid")) {
      d->pid_offset_ = pid->offset;
      d->pid_size_ = pid->size;
    }
    d->formats_.Add(std::move(*f));
  }
  d->meta_.source_format = "live tracefs instance";
  d->meta_.source_path = instance.dir();
  d->meta_.cpu_count = instance.cpu_count();
  d->meta_.page_size = d->page_size_;
  d->meta_.isa_hint = HostIsa();
  if (auto tc = instance.Read("trace_clock"); tc.ok()) {
    size_t a = tc->find('['), b = tc->find(']');
    if (a != std::string::npos && b > a) d->meta_.clock = tc->substr(a + 1, b - a - 1);
  }
  if (auto c = instance.Read("saved_cmdlines", true); c.ok()) AddCmdlines(*c, &d->meta_);
  d->decoder_ = std::make_unique<KvmDecoder>(d->formats_, d->meta_.isa_hint, diagnostics);
  d->pages_.resize(instance.cpu_count());
  return d;
}

void LivePageDecoder::AddPage(int cpu, std::span<const uint8_t> page) {
  if (cpu < 0 || static_cast<size_t>(cpu) >= pages_.size()) return;
  pages_[cpu].insert(pages_[cpu].end(), page.begin(), page.end());
}

void LivePageDecoder::Flush(const std::function<void(const KvmEvent&)>& on_event,
                            const std::function<void(const LostEvents&)>& on_lost) {
  CpuMerger merger;
  for (size_t cpu = 0; cpu < pages_.size(); ++cpu) {
    if (pages_[cpu].empty()) continue;
    merger.Add(std::make_unique<PagesStream>(static_cast<int>(cpu), pages_[cpu], page_size_, layout_, &stats_,
                                             pid_offset_, pid_size_));
  }
  RawEvent raw;
  LostEvents lost;
  KvmEvent ev;
  while (merger.Next(&raw, &lost)) {
    if (lost.cpu >= 0) on_lost(lost);
    if (decoder_->Decode(raw, &ev)) on_event(ev);
  }
  for (auto& p : pages_) p.clear();
}

}  // namespace exitscope
