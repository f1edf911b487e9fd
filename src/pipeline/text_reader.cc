#include "pipeline/text_reader.h"

#include <algorithm>
#include <charconv>

#include "decode/text_kvm_parser.h"
#include "sources/text/text_line_parser.h"
#include "sources/text/text_line_reader.h"
#include "sources/trace_clock.h"

namespace exitscope {

namespace {

// Lines a probe reads for the first event line, whose timestamp form decides the text's clock.
constexpr int kClockProbeLines = 4096;
// An event line is a few hundred bytes (a trace_marker write at most a few KiB); a line past this
// is many lines whose newlines were lost, or not text at all.
constexpr size_t kMaxLineBytes = 64 << 10;
// A line this far from its neighbours, and this many times further than they are from each other,
// is one damaged timestamp (IsOutlier), not a pause of the traced machine.
constexpr uint64_t kOutlierGapNs = 1'000'000'000;
constexpr uint64_t kOutlierFactor = 1000;

bool IsKvmEvent(const TextLine& l) {
  if (!l.system.empty()) return l.system == "kvm";
  // trace-cmd report and the kernel trace file print the bare name; every kvm tracepoint is
  // named kvm_* except vcpu_match_mmio (include/trace/events/kvm.h, arch/x86/kvm/trace.h).
  return l.event.starts_with("kvm_") || l.event == "vcpu_match_mmio";
}

// "exit_reason=1024 guest_rip=0x1000 …": trace-cmd report -R's raw fields, where every kvm event's
// own format ("reason EXIT_NPF rip 0x1000 …") begins with a word.
bool LooksRawFields(std::string_view body) {
  const size_t eq = body.find('='), sp = body.find(' ');
  return eq != std::string_view::npos && eq > 0 && eq < sp;
}

// Lines every dialect may carry that are not events: headers, comments, blank lines.
bool IsHeaderLine(std::string_view line) {
  size_t i = line.find_first_not_of(" \t\r");
  if (i == std::string_view::npos) return true;
  line = line.substr(i);
  return line[0] == '#' || line.starts_with("cpus=") || line.starts_with("version =") || line.starts_with("CPU ") ||
         line.starts_with("trace-cmd:");
}

class TextKvmSource : public KvmEventSource {
 public:
  TextKvmSource(std::unique_ptr<TextLineReader> lines, const std::string& path, bool raw_ts, const ClockOptions& clock)
      : lines_(std::move(lines)), parser_(&diagnostics_), raw_ts_(raw_ts) {
    meta_.source_path = path;
    meta_.source_format = "text";
    if (raw_ts) {
      clock_ = PlanRawTextClock(clock);
      ApplyClockPlan(clock_, &meta_);
    } else if (clock.tsc_khz > 0) {
      meta_.clock_notes.push_back("--tsc-khz ignored: the text prints its timestamps in seconds");
    }
  }

  const TraceMeta& meta() const override { return meta_; }
  Diagnostics& diagnostics() override { return diagnostics_; }
  uint64_t bytes_done() const override { return lines_->bytes_done(); }
  uint64_t bytes_total() const override { return lines_->bytes_total(); }

  bool Next(KvmEvent* event, LostEvents* lost) override {
    while (true) {
      while (!eof_ && count_ < kWindow) {
        if (ReadEventLine(&At(count_)))
          ++count_;
        else
          eof_ = true;
      }
      if (count_ == 0) break;
      const bool outlier = IsOutlier();
      Slot& s = At(0);  // stays intact until the next call reads lines again
      head_ = (head_ + 1) % kWindow;
      --count_;
      if (s.lost_cpu >= 0) pending_lost_ = LostEvents{s.lost_cpu, last_ts_ns_, s.lost_count};
      if (outlier) {
        diagnostics_.Bump(DiagId::kTextTimestampOutlier);
        continue;
      }
      const TextLine& tl = s.tl;
      accepted_ = true;
      last_line_ts_ns_ = tl.ts_ns;
      first_ts_ = std::min(first_ts_, tl.ts_ns);
      last_ts_ = std::max(last_ts_, tl.ts_ns);
      if (!IsKvmEvent(tl)) {
        ++skipped_;
        continue;
      }
      *event = KvmEvent{};
      event->ts_ns = tl.ts_ns;
      event->cpu = tl.cpu;
      event->tid = tl.tid;
      if (!parser_.Parse(tl.event, tl.body, event)) {
        diagnostics_.Bump(LooksRawFields(tl.body) ? DiagId::kTextRawFields : DiagId::kTextBadKvmLine);
        continue;
      }
      if (event->kind == EventKind::kOther) {
        ++skipped_;  // as the binary decoder does, so every form reports the same events
        continue;
      }
      Accept(tl, lost);
      return true;
    }
    Finish();
    return false;
  }

 private:
  // A kvm event handed out: its thread's name, its CPU's first time, the loss marker before it.
  void Accept(const TextLine& tl, LostEvents* lost) {
    if (tl.tid != last_tid_) {
      last_tid_ = tl.tid;
      if (!meta_.comm_by_tid.count(tl.tid)) meta_.comm_by_tid.emplace(tl.tid, std::string(tl.comm));
    }
    last_ts_ns_ = tl.ts_ns;
    if (!meta_.cpu_first_ts_ns.count(tl.cpu)) meta_.cpu_first_ts_ns.emplace(tl.cpu, tl.ts_ns);
    if (pending_lost_.cpu >= 0) {
      if (lost) *lost = pending_lost_;
      pending_lost_ = LostEvents{};
    }
    if (meta_.isa_hint == Isa::kUnknown) meta_.isa_hint = parser_.isa();
  }

  // The end of the input: the counts and the time span into the trace's meta.
  void Finish() {
    if (coarse_lines_) {
      diagnostics_.Bump(DiagId::kTextCoarseTimestamps, coarse_lines_);
      coarse_lines_ = 0;
    }
    if (skipped_) {
      // Same counter as decode/kvm_decoder.cc: the report reads alike whatever the input form.
      diagnostics_.Bump(DiagId::kDecodeSkippedEvents, skipped_);
      skipped_ = 0;
    }
    if (first_ts_ <= last_ts_) {
      meta_.first_ts_ns = first_ts_;
      meta_.last_ts_ns = last_ts_;
    }
    if (lines_->truncated() && !truncation_counted_) {
      truncation_counted_ = true;
      diagnostics_.Bump(DiagId::kTextTruncatedGzip);
    }
  }

  // One event line, copied out of the reader's buffer: the outlier check looks two lines ahead.
  struct Slot {
    std::string text;
    TextLine tl;            // its views point into `text`
    int32_t lost_cpu = -1;  // a "[LOST n EVENTS]" line came before this one
    uint64_t lost_count = 0;
  };
  static constexpr int kWindow = 3;
  Slot& At(int i) { return slots_[(head_ + i) % kWindow]; }

  // Reads up to the next event line (kvm or not) into `s`, counting what it skips; false at the end.
  bool ReadEventLine(Slot* s) {
    std::string_view line;
    TextLine tl;
    while (lines_->NextLine(&line)) {
      ++line_no_;
      if (line.size() > kMaxLineBytes) {
        diagnostics_.Bump(DiagId::kTextOverlongLine);
        continue;
      }
      if (!ParseTextLine(line, &tl)) {
        int32_t cpu;
        uint64_t count;
        if (ParseLostLine(line, &cpu, &count)) {
          diagnostics_.Bump(DiagId::kTextLostEvents, count ? count : 1);
          lost_cpu_ = cpu;
          lost_count_ = count;
          continue;
        }
        if (IsHeaderLine(line)) {
          NoteHeader(line);
          continue;
        }
        diagnostics_.Bump(DiagId::kTextUnparsedLine);
        continue;
      }
      NoteDialect(tl);
      if (tl.ts_raw != raw_ts_) {
        diagnostics_.Bump(DiagId::kTextMixedTimestampForms);
        continue;
      }
      if (lines_->unterminated()) {
        // A cut last line parses, with its last field (often the RIP) cut short.
        diagnostics_.Bump(DiagId::kTextTruncatedLastLine);
        continue;
      }
      if (raw_ts_)
        tl.ts_ns = clock_.ToNs(tl.ts_ns);
      else if (tl.ts_frac_digits < 9)
        ++coarse_lines_;
      // Every dialect prints events in time order: a step back on any event line is damage.
      if (tl.ts_ns < read_ts_ns_) diagnostics_.Bump(DiagId::kTextTimeBackwards);
      read_ts_ns_ = tl.ts_ns;
      s->text.assign(line);
      auto rebase = [&](std::string_view v) {
        if (v.empty() || v.data() < line.data() || v.data() > line.data() + line.size()) return v;
        return std::string_view(s->text.data() + (v.data() - line.data()), v.size());
      };
      tl.comm = rebase(tl.comm);
      tl.system = rebase(tl.system);
      tl.event = rebase(tl.event);
      tl.body = rebase(tl.body);
      s->tl = tl;
      s->lost_cpu = lost_cpu_;
      s->lost_count = lost_count_;
      lost_cpu_ = -1;
      lost_count_ = 0;
      return true;
    }
    return false;
  }

  // One damaged timestamp (a digit changed) puts a single line far from the lines around it; read,
  // it would stretch the trace's duration and shrink every rate. Inside the text it is a line out
  // of order while its neighbours are in order. At the ends only its distance tells: the first line
  // over a second before a dense pair, the last one further past the others than they span.
  bool IsOutlier() {
    const uint64_t c = At(0).tl.ts_ns;
    if (accepted_ && count_ >= 2) {
      const uint64_t n = At(1).tl.ts_ns;
      return last_line_ts_ns_ <= n && (c > n || c < last_line_ts_ns_);
    }
    if (accepted_) {  // the last line
      if (c < first_ts_) return true;
      return c > last_line_ts_ns_ && c - last_line_ts_ns_ > kOutlierGapNs &&
             c - last_line_ts_ns_ > last_line_ts_ns_ - first_ts_;
    }
    if (count_ < 3) return false;  // the first line, with two to judge it by
    const uint64_t n = At(1).tl.ts_ns, n2 = At(2).tl.ts_ns;
    if (n > n2) return false;  // the disorder is further on
    if (c > n) return true;
    return n - c > kOutlierGapNs && (n - c) / kOutlierFactor > n2 - n;
  }

  // "cpus=2" (trace-cmd report), "#P:2" (kernel trace file header): the CPU count.
  void NoteHeader(std::string_view line) {
    if (line.find("# tracer:") != std::string_view::npos) kernel_trace_header_ = true;
    size_t p = line.find("#P:");
    size_t skip = 3;
    if (p == std::string_view::npos && line.starts_with("cpus=")) p = 0, skip = 5;
    if (p == std::string_view::npos) return;
    int n = 0;
    std::from_chars(line.data() + p + skip, line.data() + line.size(), n);
    if (n > 0) meta_.cpu_count = n;
  }

  void NoteDialect(const TextLine& tl) {
    TextDialect d = tl.dialect;
    if (d == TextDialect::kTraceCmd && kernel_trace_header_) d = TextDialect::kKernelTrace;
    if (d == dialect_) return;
    if (dialect_ != TextDialect::kUnknown) {
      diagnostics_.Bump(DiagId::kTextMixedDialects);
      return;
    }
    dialect_ = d;
    meta_.source_format = std::string("text: ") + std::string(TextDialectName(d)) + (lines_->gzip() ? " (gzip)" : "");
  }

  std::unique_ptr<TextLineReader> lines_;
  Diagnostics diagnostics_;
  TraceMeta meta_;
  TextKvmParser parser_;
  TextDialect dialect_ = TextDialect::kUnknown;
  bool kernel_trace_header_ = false;
  bool truncation_counted_ = false;
  uint64_t line_no_ = 0;
  uint64_t skipped_ = 0;
  uint64_t coarse_lines_ = 0;     // event lines with fewer than 9 fraction digits (kTextCoarseTimestamps)
  uint64_t last_ts_ns_ = 0;       // of the last kvm event (loss markers are stamped with it)
  uint64_t last_line_ts_ns_ = 0;  // of the last event line kept, kvm or not
  uint64_t first_ts_ = UINT64_MAX, last_ts_ = 0;  // of every event line, kvm or not
  bool raw_ts_ = false;                           // timestamps printed as plain integers
  ClockPlan clock_;                               // how raw_ts_ integers become ns (if they do)
  int32_t last_tid_ = -1;
  LostEvents pending_lost_;
  Slot slots_[kWindow];
  int head_ = 0, count_ = 0;  // slots_ in use, from head_
  bool eof_ = false;
  bool accepted_ = false;    // an event line was read (not an outlier)
  uint64_t read_ts_ns_ = 0;  // of the last event line read, outlier or not
  int32_t lost_cpu_ = -1;    // a "[LOST n EVENTS]" line not yet followed by an event line
  uint64_t lost_count_ = 0;
};

}  // namespace

// True when the first event line prints its timestamp as a plain integer (not seconds).
static bool FirstTimestampIsRaw(TextLineReader* lines) {
  std::string_view line;
  TextLine tl;
  for (int i = 0; i < kClockProbeLines && lines->NextLine(&line); ++i) {
    if (ParseTextLine(line, &tl)) return tl.ts_raw;
  }
  return false;
}

Result<std::unique_ptr<KvmEventSource>> OpenTextSource(const std::string& path, const ClockOptions& clock) {
  auto input = MappedFile::Open(path);
  if (!input) return input.error();
  return OpenTextSource(std::move(input.value()), clock);
}

Result<std::unique_ptr<KvmEventSource>> OpenTextSource(std::unique_ptr<MappedFile> input, const ClockOptions& clock) {
  // The clock probe reads the same bytes through a view: opening the path again would find a
  // pipe or FIFO drained (or block for ever on a FIFO written once).
  const std::string path = input->path();
  auto probe = TextLineReader::Open(MappedFile::View(input->bytes(), path));
  if (!probe) return probe.error();
  bool raw = FirstTimestampIsRaw(probe->get());
  probe.value().reset();
  auto lines = TextLineReader::Open(std::move(input));
  if (!lines) return lines.error();
  return std::unique_ptr<KvmEventSource>(new TextKvmSource(std::move(lines.value()), path, raw, clock));
}

Result<std::unique_ptr<KvmEventSource>> OpenTextSourceBuffer(std::span<const uint8_t> bytes, const std::string& name,
                                                             const ClockOptions& clock) {
  auto probe = TextLineReader::Open(MappedFile::View(bytes, name));
  if (!probe) return probe.error();
  bool raw = FirstTimestampIsRaw(probe->get());
  auto lines = TextLineReader::Open(MappedFile::View(bytes, name));
  if (!lines) return lines.error();
  return std::unique_ptr<KvmEventSource>(new TextKvmSource(std::move(lines.value()), name, raw, clock));
}

bool LooksLikeTextTrace(std::string_view head) {
  int events = 0, other = 0;
  while (!head.empty() && events + other < 64) {
    size_t nl = head.find('\n');
    if (nl == std::string_view::npos) break;  // a cut-off last line proves nothing
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl + 1);
    TextLine tl;
    if (ParseTextLine(line, &tl))
      ++events;
    else if (!IsHeaderLine(line))
      ++other;
  }
  return events > 0 && events >= other;
}

}  // namespace exitscope
