// Test/bench helper: a minimal reader of the kernel's own trace text (TP_printk dialect, e.g.
// dual-5000/kernel-trace.txt.gz) into KvmEvents, and a KvmEventSource over a vector of events.
// Only for feeding real event sequences to the analysis stage in tests and benchmarks; the product's
// text readers live in src/sources/ (formats). Timestamps have the text's microsecond resolution.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "decode/exit_reasons.h"
#include "model/event_source.h"
#include "test_util.h"

namespace exitscope::testing {

inline uint64_t Num(std::string_view s, size_t pos, int base) {
  return std::strtoull(std::string(s.substr(pos, 24)).c_str(), nullptr, base);
}

// Value after `key ` in `s`, in `base`; 0 when absent.
inline uint64_t Field(std::string_view s, std::string_view key, int base) {
  size_t p = s.find(key);
  return p == std::string_view::npos ? 0 : Num(s, p + key.size(), base);
}

inline bool ParseKernelTextLine(std::string_view line, KvmEvent* e) {
  size_t lb = line.find('[');
  size_t colon = line.find(": ", lb);
  if (lb == std::string_view::npos || colon == std::string_view::npos || line[0] == '#') return false;
  size_t name_end = line.find(": ", colon + 2);
  if (name_end == std::string_view::npos) return false;
  std::string_view name = line.substr(colon + 2, name_end - colon - 2);
  std::string_view args = line.substr(name_end + 2);
  std::string_view task = line.substr(0, lb);
  while (!task.empty() && task.back() == ' ') task.remove_suffix(1);
  *e = KvmEvent{};
  e->tid = static_cast<int32_t>(Num(task, task.rfind('-') + 1, 10));
  e->cpu = static_cast<int32_t>(Num(line, lb + 1, 10));
  size_t ts_start = line.rfind(' ', colon) + 1;
  std::string ts(line.substr(ts_start, colon - ts_start));
  size_t dot = ts.find('.');
  e->ts_ns = std::strtoull(ts.substr(0, dot).c_str(), nullptr, 10) * 1000000000ull;
  std::string frac = ts.substr(dot + 1);
  while (frac.size() < 9) frac += '0';
  e->ts_ns += std::strtoull(frac.c_str(), nullptr, 10);
  if (name == "kvm_exit") {
    e->kind = EventKind::kExit;
    size_t r = args.find("reason ") + 7, end = args.find(" rip ");
    std::string_view reason = args.substr(r, end - r);
    e->isa = IsaFromReasonName(reason);
    e->reason = ExitReasonFromName(e->isa, reason).value_or(0);
    e->vcpu_id = static_cast<int32_t>(Field(args, "vcpu ", 10));
    e->rip = Field(args, "rip 0x", 16);
    e->info1 = Field(args, "info1 0x", 16);
    e->info2 = Field(args, "info2 0x", 16);
  } else if (name == "kvm_entry") {
    e->kind = EventKind::kEntry;
    e->vcpu_id = static_cast<int32_t>(Field(args, "vcpu ", 10));
    e->rip = Field(args, "rip 0x", 16);
  } else if (name == "kvm_userspace_exit") {
    e->kind = EventKind::kUserspaceExit;
    e->reason = static_cast<uint32_t>(Field(args, "(", 10));
  } else if (name == "kvm_msr") {
    e->kind = EventKind::kMsr;
    e->write = args.starts_with("msr_write");
    e->info1 = Num(args, args.find(' ') + 1, 16);
    e->error_code = args.find("(#GP)") != std::string_view::npos;
  } else if (name == "kvm_pio") {
    e->kind = EventKind::kPio;
    e->write = args.starts_with("pio_write");
    e->info1 = Field(args, "at 0x", 16);
    e->size = static_cast<uint32_t>(Field(args, "size ", 10));
    e->count = static_cast<uint32_t>(Field(args, "count ", 10));
  } else if (name == "kvm_mmio") {
    e->kind = EventKind::kMmio;
    e->aux = args.starts_with("mmio write") ? 2 : args.starts_with("mmio read") ? 1 : 0;
    e->write = e->aux == 2;
    e->size = static_cast<uint32_t>(Field(args, "len ", 10));
    e->info1 = Field(args, "gpa 0x", 16);
  } else if (name == "kvm_hypercall") {
    e->kind = EventKind::kHypercall;
    e->info1 = Field(args, "nr 0x", 16);
  } else if (name == "kvm_cr") {
    e->kind = EventKind::kCr;
    e->write = args.starts_with("cr_write");
    e->size = static_cast<uint32_t>(Num(args, args.find(' ') + 1, 10));
  } else {
    e->kind = EventKind::kOther;
  }
  return true;
}

inline std::vector<KvmEvent> ParseKernelText(const std::string& text) {
  std::vector<KvmEvent> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    KvmEvent e;
    if (ParseKernelTextLine(std::string_view(text).substr(pos, nl - pos), &e)) out.push_back(e);
    pos = nl + 1;
  }
  return out;
}

// Replays `events` `repeat` times, each pass shifted after the previous one in time.
class VectorSource : public KvmEventSource {
 public:
  VectorSource(std::vector<KvmEvent> events, TraceMeta meta, int repeat = 1)
      : events_(std::move(events)), meta_(std::move(meta)), repeat_(repeat) {
    if (!events_.empty()) span_ns_ = events_.back().ts_ns - events_.front().ts_ns + 1000;
  }
  const TraceMeta& meta() const override { return meta_; }
  bool Next(KvmEvent* event, LostEvents* lost) override {
    if (i_ == events_.size()) {
      if (++pass_ >= repeat_) return false;
      i_ = 0;
    }
    *event = events_[i_++];
    event->ts_ns += pass_ * span_ns_;
    return true;
  }
  Diagnostics& diagnostics() override { return diagnostics_; }

 private:
  std::vector<KvmEvent> events_;
  TraceMeta meta_;
  Diagnostics diagnostics_;
  int repeat_;
  int pass_ = 0;
  size_t i_ = 0;
  uint64_t span_ns_ = 0;
};

}  // namespace exitscope::testing
