// Writes exits as Chrome trace-event JSON (the "JSON Object Format" that chrome://tracing and the
// Perfetto UI load): a process per VM and a thread per vCPU thread, named by "M" metadata events; one
// complete event ("X") per timed exit, named by reason, with the exit's details as args; an instant
// event ("i") per untimed exit; counters ("C") of exits/s per reason and VM from the time bins.
// In: the exits a report accepted (an ExitSampleSink, streamed to the file in batches as they come,
// formatted and written on a thread of their own or on the caller's), then at Finish the bins and
// the report of the same pass. Out: one file; ts/dur in microseconds from the trace's first event,
// to the ns (three decimals).
// Assumption: a UI chokes on ~1 GB of JSON, so at most max_exits exits are written (the first ones,
// in the order their entries came, so a prefix in time); the rest are counted and the file says so.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/exit_bins.h"
#include "analysis/exit_pairer.h"
#include "base/ordered_work.h"
#include "model/report_model.h"

namespace exitscope {

inline constexpr int kTimelineSchemaVersion = 1;            // of the file's otherData.exitscope block
inline constexpr uint64_t kDefaultTimelineExits = 500'000;  // ~125 MB of JSON (~250 bytes an exit)

// Exits waiting to be formatted, and their JSON once formatted.
struct TimelineExit {
  ExitSample sample;
  int64_t pid;  // the VM's id: the process of the file's thread
  bool timed;
};
struct TimelineBatch {
  std::vector<TimelineExit> exits;
  bool first = false;  // holds the file's first element (no comma before it)
  std::string json;
  void clear() { exits.clear(), json.clear(); }
};

class ChromeTraceWriter : public ExitSampleSink {
 public:
  // `out` stays the caller's; max_exits 0 = no cap. format_threads 1: the exits are formatted on a
  // thread of their own, in batches, while the caller's thread reads on (0: on the caller's).
  ChromeTraceWriter(std::FILE* out, const TraceMeta& meta, const ExitBinner& bins, uint64_t max_exits,
                    unsigned format_threads = 0);
  ~ChromeTraceWriter() override;
  void OnExitSample(const ExitSample& s) override { Write(s, true); }
  void OnUntimedExit(const ExitSample& s) override { Write(s, false); }
  // Names, counters and the closing block; false when a write failed.
  bool Finish(const Report& report);

  uint64_t written() const { return written_; }
  uint64_t dropped() const { return dropped_; }
  uint64_t first_dropped_ts_ns() const { return first_dropped_ts_ns_; }

 private:
  void Write(const ExitSample& s, bool timed);
  void HandOver(bool drain);
  void FormatBatch(TimelineBatch* b);
  void FormatExit(const TimelineExit& e, std::string* out);
  // One array element, comma-separated: Finish's, once every batch is written.
  void Event(const std::string& json);
  // Writes what line_ holds once it is at least `at_least` bytes (0: whatever it holds).
  void Flush(size_t at_least);

  // What line_ gathers before it is written (the names and counters Finish adds).
  static constexpr size_t kFlushBytes = 1 << 20;
  // Exits handed to the formatting thread at a time, written as one piece of ~1 MB: an exit is ~250
  // bytes, and each one written through the FILE's own 4 KB buffer made a write(2) per 16 exits,
  // 30,000 calls for the default cap's 125 MB.
  static constexpr size_t kBatchExits = 4096;
  std::string Us(uint64_t ns_since_origin) const;
  // A reason's or a VMM exit's JSON-quoted name, made once per name rather than once per exit.
  const std::string& QuotedName(Isa isa, uint32_t reason);
  const std::string& QuotedVmmExit(uint32_t userspace_reason);

  std::FILE* out_;
  const TraceMeta& meta_;
  const ExitBinner& bins_;
  uint64_t max_exits_;
  uint64_t written_ = 0, dropped_ = 0, first_dropped_ts_ns_ = 0;
  bool first_ = true;
  std::string line_;  // not written yet: the file's head, then what Finish adds
  // The formatting's own (the worker's, or the caller's thread's when there is none).
  std::string detail_;                                // one detail's text, before it is quoted
  std::unordered_map<uint64_t, std::string> quoted_;  // (kind, isa, code) → quoted name
  OrderedWork<TimelineBatch> work_;                   // last: its thread reads the members above
};

}  // namespace exitscope
