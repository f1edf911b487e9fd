// `exitscope dump`: every record of a trace, all fields decoded by name from the trace's own
// formats, in time order across CPUs. The ground truth view: check any report number against it.
#include <CLI/CLI.hpp>
#include <unistd.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "analysis/exit_driver.h"
#include "base/append_number.h"
#include "base/ordered_work.h"
#include "base/json_text.h"
#include "cli/command.h"
#include "cli/filter_options.h"
#include "decode/exit_reasons.h"
#include "decode/text_kvm_parser.h"
#include "decode/field_text.h"
#include "pipeline/input_detector.h"

namespace exitscope {
namespace {

constexpr char kDumpHelp[] =
    "Print every event of a trace, one per line, in time order across CPUs:\n"
    "  <seconds> <cpu> <pid> <comm> <event>: <field>=<value> …\n"
    "Fields come from the trace's own event formats (all events, not only kvm), so what you see is\n"
    "what the kernel recorded. 8-byte unsigned values print in hex, others in decimal.\n"
    "Lost events (ring-buffer overruns) appear as '# lost' lines where they happened.\n"
    "A trace whose clock is not in ns (x86-tsc without TSC2NSEC, counter) prints its raw integers\n"
    "(JSON key ts_cycles / ts_count instead of ts_ns) until --tsc-khz converts TSC cycles.";

constexpr char kDumpInputsText[] =
    ";\nor trace text from `trace-cmd report`, `perf script` or tracefs's trace file (also .gz): its kvm events\n"
    "are printed as exitscope parsed them (the fields report uses), since text holds no raw records.";

constexpr char kDumpExamples[] =
    "Examples:\n"
    "  exitscope dump trace.dat --event kvm_exit --limit 20\n"
    "  exitscope dump perf.data --event kvm:kvm_exit --ns\n"
    "  exitscope dump trace.dat --json | jq 'select(.event==\"kvm_msr\")'\n"
    "  exitscope dump trace.dat --ns --event kvm:kvm_entry --event kvm:kvm_exit\n"
    "  exitscope dump trace-cmd-report.txt --event kvm_exit   # text: what report parsed";

constexpr char kDumpExitStatus[] =
    "Exit status: 0 complete; 65 events were lost or malformed (every readable event is still\n"
    "printed, with '# lost' lines) or unreadable data; 64 bad option or unknown --event;\n"
    "66 input missing; 74 I/O error; 77 permission denied.";

struct DumpOptions {
  std::string path;
  uint64_t limit = 0;
  std::vector<std::string> events;
  bool json = false;
  bool ns = false;
  unsigned threads = 0;  // formatting threads; 0: DecodeThreads's default
  ClockOptions clock;
};

// Times not in ns (TSC cycles, counts) print as the integers they are, as trace-cmd report does.
void AppendTs(std::string* out, uint64_t ts_ns, bool ns, TimeUnit unit = TimeUnit::kNs) {
  if (unit != TimeUnit::kNs) {
    AppendDecimal(out, ts_ns);
    return;
  }
  AppendDecimal(out, ts_ns / 1000000000);
  out->push_back('.');
  if (ns)
    AppendPadded(out, ts_ns % 1000000000, 9);
  else
    AppendPadded(out, (ts_ns % 1000000000) / 1000, 6);
}

std::string FormatTs(uint64_t ts_ns, bool ns, TimeUnit unit = TimeUnit::kNs) {
  std::string s;
  AppendTs(&s, ts_ns, ns, unit);
  return s;
}

// Text inputs hold no raw records: their events are shown as exitscope parsed them, with the
// KvmEvent fields their kind uses (model/kvm_event.h), so a report number can be checked here too.
void AppendKvmFields(const KvmEvent& e, std::string* line, nlohmann::json* fields) {
  auto put = [&](const char* name, uint64_t v, bool hex) {
    if (fields)
      (*fields)[name] = v;
    else
      *line += hex ? fmt::format(" {}={:#x}", name, v) : fmt::format(" {}={}", name, v);
  };
  switch (e.kind) {
    case EventKind::kExit:
      put("exit_reason", e.reason, false);
      if (fields)
        (*fields)["reason_name"] = ExitReasonName(e.isa, e.reason);
      else
        *line += " (" + ExitReasonName(e.isa, e.reason) + ")";
      put("guest_rip", e.rip, true);
      put("isa", static_cast<uint64_t>(e.isa), false);
      put("info1", e.info1, true);
      put("info2", e.info2, true);
      put("intr_info", e.intr_info, false);
      put("error_code", e.error_code, false);
      break;
    case EventKind::kEntry: put("rip", e.rip, true); break;
    default:
      put("write", e.write, false);
      put("size", e.size, false);
      put("info1", e.info1, true);
      put("info2", e.info2, true);
      if (e.reason) put("reason", e.reason, false);
      if (e.count) put("count", e.count, false);
      if (e.aux) put("aux", e.aux, false);
      if (e.error_code) put("error_code", e.error_code, false);
      break;
  }
  if (e.vcpu_id >= 0) put("vcpu_id", static_cast<uint64_t>(e.vcpu_id), false);
}

// The '# lost' line (or JSON object) printed where the ring buffer dropped events.
std::string LostLine(const LostEvents& lost, const DumpOptions& opt, const std::string& ts_key, TimeUnit unit) {
  if (opt.json) return nlohmann::json{{"lost", lost.count}, {"cpu", lost.cpu}, {ts_key, lost.ts_ns}}.dump() + "\n";
  return fmt::format("# lost {} events on cpu {} before {}\n",
                     lost.count ? std::to_string(lost.count) : "an unknown number of", lost.cpu,
                     FormatTs(lost.ts_ns, opt.ns, unit));
}

// After the events: the non-zero counters on stderr, and the exit status they mean.
int FinishDump(const Diagnostics& diag) {
  for (const auto& c : diag.NonZero()) {
    std::fprintf(stderr, "# %s %s: %llu (%s)\n", std::string(SeverityName(c.severity)).c_str(), c.name.c_str(),
                 static_cast<unsigned long long>(c.count), c.description.c_str());
  }
  return diag.HasDataLoss() ? kExitDataErr : kExitOk;
}

// --event names for text input: the kvm events exitscope models, with or without "kvm:".
Result<std::set<std::string, std::less<>>> ResolveTextEvents(const std::vector<std::string>& events) {
  std::set<std::string, std::less<>> wanted;
  for (const std::string& e : events) {
    std::string_view name = e;
    if (name.starts_with("kvm:")) name.remove_prefix(4);
    if (EventKindFromName(name) == EventKind::kOther) {
      return MakeError(kExitUsage, "dump.unknown-event", "text input has no event named '" + e + "'",
                       "in trace text exitscope reads the kvm events it models, e.g. kvm_exit, "
                       "kvm_entry, kvm_msr, kvm_pio, kvm_mmio");
    }
    wanted.insert(std::string(name));
  }
  return wanted;
}

std::string KvmEventLine(const KvmEvent& ev, const std::string& name, const TraceMeta& meta, const DumpOptions& opt) {
  auto comm_it = meta.comm_by_tid.find(ev.tid);
  std::string_view comm = comm_it != meta.comm_by_tid.end() ? std::string_view(comm_it->second) : "<...>";
  if (opt.json) {
    nlohmann::json j{{"ts_ns", ev.ts_ns}, {"cpu", ev.cpu}, {"pid", ev.tid},
                     {"comm", comm},      {"event", name}, {"system", "kvm"}};
    nlohmann::json fields = nlohmann::json::object();
    AppendKvmFields(ev, nullptr, &fields);
    j["fields"] = std::move(fields);
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  std::string line = fmt::format("{} {:03} {} {} {}:", FormatTs(ev.ts_ns, opt.ns), ev.cpu, ev.tid, comm, name);
  AppendKvmFields(ev, &line, nullptr);
  line.push_back('\n');
  return line;
}

int DumpText(const DumpOptions& opt, OpenedInput input) {
  auto opened = OpenKvmEventSource(std::move(input));
  if (!opened.ok()) return PrintError(opened.error());
  KvmEventSource& src = **opened;
  auto wanted = ResolveTextEvents(opt.events);
  if (!wanted.ok()) return PrintError(wanted.error());
  uint64_t printed = 0;
  DriveEvents(src, [&](const KvmEvent& ev, const LostEvents* lost) {
    if (lost) WriteStdout(LostLine(*lost, opt, "ts_ns", TimeUnit::kNs));
    std::string name(ev.kind == EventKind::kOther ? "kvm_other" : EventKindName(ev.kind));
    if (!wanted->empty() && !wanted->count(name)) return true;
    if (!WriteStdout(KvmEventLine(ev, name, src.meta(), opt))) return false;  // FinishStdout says why
    return !(opt.limit && ++printed >= opt.limit);
  });
  if (int written = FinishStdout(kExitOk); written != kExitOk) return written;
  return FinishDump(src.diagnostics());
}

// --event names to type ids, once; "name" or "system:name".
Result<std::set<uint16_t>> ResolveEvents(const FormatRegistry& formats, const std::vector<std::string>& events) {
  std::set<uint16_t> wanted;
  for (const std::string& e : events) {
    size_t colon = e.find(':');
    std::string_view sys = colon == std::string::npos ? std::string_view() : std::string_view(e).substr(0, colon);
    std::string_view name = colon == std::string::npos ? std::string_view(e) : std::string_view(e).substr(colon + 1);
    bool found = false;
    for (const auto& f : formats.all()) {
      if (f->name == name && (sys.empty() || f->system == sys)) {
        wanted.insert(f->id);
        found = true;
      }
    }
    if (!found) {
      return MakeError(kExitUsage, "dump.unknown-event", "the trace has no event named '" + e + "'",
                       "event names are as in tracefs, e.g. kvm_exit or kvm:kvm_exit");
    }
  }
  return wanted;
}

// Each type id's format and field plan, worked out at its first record: the id's lookup hashes,
// and the plan reads the fields' type texts, once per id instead of once per record.
class FormatPlans {
 public:
  explicit FormatPlans(const FormatRegistry& formats) : formats_(formats) {}

  struct Plan {
    const EventFormat* format = nullptr;  // none: a type id the trace has no format for
    std::unique_ptr<FieldTextPlan> fields;
    bool looked_up = false;
  };

  const Plan& Get(uint16_t id) {
    if (id >= plans_.size()) plans_.resize(size_t{id} + 1);
    Plan& p = plans_[id];
    if (!p.looked_up) {
      p.looked_up = true;
      p.format = formats_.ById(id);
      if (p.format) p.fields = std::make_unique<FieldTextPlan>(*p.format);
    }
    return p;
  }

 private:
  const FormatRegistry& formats_;
  std::vector<Plan> plans_;
};

// The thread name of a tid, remembered for the next record: records come in runs of one thread.
class CommLookup {
 public:
  explicit CommLookup(const TraceMeta& meta) : meta_(meta) {}
  std::string_view Get(int32_t tid) {
    if (tid != tid_ || !known_) {
      auto it = meta_.comm_by_tid.find(tid);
      comm_ = it != meta_.comm_by_tid.end() ? std::string_view(it->second)
                                            : std::string_view(tid == 0 ? "<idle>" : "<...>");
      tid_ = tid;
      known_ = true;
    }
    return comm_;
  }

 private:
  const TraceMeta& meta_;
  int32_t tid_ = 0;
  bool known_ = false;
  std::string_view comm_;
};

// One record, every field decoded by its format (none for a type id without one), appended to
// *out: a dump is a line per record, millions of them, written out in blocks.
void AppendRawEventLine(const RawEvent& ev, const FormatPlans::Plan& plan, std::string_view comm, TimeUnit unit,
                        const DumpOptions& opt, const std::string& ts_key, std::string* out) {
  const EventFormat* fmt = plan.format;
  if (opt.json) {
    // The members in key order, as nlohmann's object (a sorted map) printed them: comm, cpu,
    // event, fields, pid, system, then ts_ns (or ts_cycles …).
    out->append("{\"comm\":");
    AppendJsonString(out, comm);
    out->append(",\"cpu\":");
    AppendSigned(out, ev.cpu);
    out->append(",\"event\":");
    if (fmt) {
      AppendJsonString(out, fmt->name);
      out->append(",\"fields\":");
      plan.fields->AppendJson(ev.payload, out);
    } else {
      out->append("\"unknown_type_");
      AppendDecimal(out, ev.type_id);
      out->push_back('"');
    }
    out->append(",\"pid\":");
    AppendSigned(out, ev.tid);
    if (fmt) {
      out->append(",\"system\":");
      AppendJsonString(out, fmt->system);
    }
    out->push_back(',');
    AppendJsonString(out, ts_key);
    out->push_back(':');
    AppendDecimal(out, ev.ts_ns);
    out->push_back('}');
  } else {
    AppendTs(out, ev.ts_ns, opt.ns, unit);
    out->push_back(' ');
    if (ev.cpu >= 0)
      AppendPadded(out, static_cast<uint64_t>(ev.cpu), 3);
    else
      fmt::format_to(std::back_inserter(*out), "{:03}", ev.cpu);
    out->push_back(' ');
    AppendSigned(out, ev.tid);
    out->push_back(' ');
    out->append(comm);
    out->push_back(' ');
    if (fmt) {
      out->append(fmt->name);
    } else {
      out->append("unknown_type_");
      AppendDecimal(out, ev.type_id);
    }
    out->push_back(':');
    if (fmt) plan.fields->Append(ev.payload, out);
  }
  out->push_back('\n');
}

// Records per batch a formatting thread takes: ~0.5 MB of lines, a few hundred us of work.
constexpr size_t kDumpBatchRecords = 4096;

// A block of records for a formatting thread, copied: the source's payload spans last only until
// its next record. Kept small (32 bytes a record): the reading thread writes one per record.
struct DumpBatch {
  struct Record {
    uint64_t ts_ns;
    int32_t cpu, tid;
    uint16_t type_id;
    bool shown;             // false: only its loss marker is printed (the record is left out)
    bool lost;              // a loss marker comes before it: the next of `markers`
    uint32_t offset, size;  // its payload in `bytes`
  };
  std::vector<Record> records;
  std::vector<LostEvents> markers;
  std::vector<uint8_t> bytes;  // the payloads, one after another
  std::string lines;           // the formatted output
  void clear() {
    records.clear();
    markers.clear();
    bytes.clear();
    lines.clear();
  }
  void Add(const RawEvent& ev, bool shown, const LostEvents* lost) {
    const uint32_t offset = static_cast<uint32_t>(bytes.size()),
                   size = shown ? static_cast<uint32_t>(ev.payload.size()) : 0;
    records.push_back({ev.ts_ns, ev.cpu, ev.tid, ev.type_id, shown, lost != nullptr, offset, size});
    if (lost) markers.push_back(*lost);
    if (size) {
      bytes.resize(offset + size_t{size});
      std::memcpy(bytes.data() + offset, ev.payload.data(), size);
    }
  }
};

// One formatting thread's state: each id's plan and the last thread name, built as they are met.
struct DumpFormatter {
  explicit DumpFormatter(const FormatRegistry& formats, const TraceMeta& meta) : plans(formats), comms(meta) {}
  FormatPlans plans;
  CommLookup comms;
};

void FormatDumpBatch(DumpBatch& b, DumpFormatter& f, TimeUnit unit, const DumpOptions& opt, const std::string& ts_key) {
  size_t marker = 0;
  for (const DumpBatch::Record& r : b.records) {
    if (r.lost) b.lines += LostLine(b.markers[marker++], opt, ts_key, unit);
    if (!r.shown) continue;
    RawEvent ev;
    ev.ts_ns = r.ts_ns;
    ev.cpu = r.cpu;
    ev.tid = r.tid;
    ev.type_id = r.type_id;
    ev.payload = std::span<const uint8_t>(b.bytes.data() + r.offset, r.size);
    AppendRawEventLine(ev, f.plans.Get(ev.type_id), f.comms.Get(ev.tid), unit, opt, ts_key, &b.lines);
  }
}

int Dump(const DumpOptions& opt) {
  // Opened once: a pipe or FIFO read for sniffing cannot be opened again.
  auto input = OpenInput(opt.path);
  if (!input.ok()) return PrintError(input.error());
  if (input->format == InputFormat::kText) return DumpText(opt, std::move(input.value()));
  auto opened = OpenRawEventSource(std::move(input.value()), opt.clock);
  if (!opened.ok()) return PrintError(opened.error());
  RawEventSource& src = *opened.value();
  const FormatRegistry& formats = src.formats();
  const TraceMeta& meta = src.meta();
  const TimeUnit unit = meta.time_unit;
  const std::string ts_key = unit == TimeUnit::kNs ? "ts_ns" : "ts_" + std::string(TimeUnitName(unit));
  for (const auto& note : meta.clock_notes) std::fprintf(stderr, "# warning: %s\n", note.c_str());
  auto wanted = ResolveEvents(formats, opt.events);
  if (!wanted.ok()) return PrintError(wanted.error());

  // Formatting costs more than reading: the reading thread copies records into batches and workers
  // format them, on the cores the reading thread and the source's own threads leave (none left, or
  // -j 1: the reading thread formats each batch itself; on 2 cores a zstd trace.dat's decompression
  // takes the other core, and formatting beside it was 1.09x slower). Times and thread names are
  // read from the trace's metadata, which the sources fill before the first record.
  const unsigned threads = DecodeThreads(opt.threads);
  const unsigned busy = 1 + src.busy_threads();
  const unsigned workers = threads > busy ? threads - busy : 0;
  std::vector<std::unique_ptr<DumpFormatter>> formatters;
  for (unsigned i = 0; i < std::max(workers, 1u); ++i)
    formatters.push_back(std::make_unique<DumpFormatter>(formats, meta));
  OrderedWork<DumpBatch> work(
      workers, [&](DumpBatch& b, unsigned worker) { FormatDumpBatch(b, *formatters[worker], unit, opt, ts_key); });
  auto write = [](const DumpBatch& b) { return WriteStdout(b.lines); };  // false: FinishStdout says why

  uint64_t printed = 0, unknown_ids = 0;
  FormatPlans plans(formats);  // the reading thread's own: which ids have a format
  // Progress only when stderr is a terminal and stdout is not (a dump to the screen shows itself).
  const bool progress = isatty(fileno(stderr)) && !isatty(fileno(stdout)) && src.bytes_total();
  bool writing = true;
  DriveEvents(
      src,
      [&](const RawEvent& ev, const LostEvents* lost) {
        DumpBatch& b = work.current();
        // Printed as unknown_type_N (no fields to show), and counted: an id without a format is damage.
        if (!plans.Get(ev.type_id).format) ++unknown_ids;
        const bool shown = wanted->empty() || wanted->count(ev.type_id);
        // A loss is printed where it happened, before a record left out too.
        if (!shown && !lost) return true;
        b.Add(ev, shown, lost);
        if (b.records.size() >= kDumpBatchRecords && !work.Submit(write)) return writing = false;
        return !(shown && opt.limit && ++printed >= opt.limit);
      },
      progress ? ProgressFn(PrintProgress) : ProgressFn());
  if (writing && work.Submit(write)) work.Drain(write);
  if (int written = FinishStdout(kExitOk); written != kExitOk) return written;
  if (progress) ClearProgress();
  if (unknown_ids) src.diagnostics().Bump(DiagId::kDecodeUnknownEventId, unknown_ids);
  return FinishDump(src.diagnostics());
}

}  // namespace

int RunDumpCommand(int argc, char** argv) {
  CLI::App app{"exitscope dump: every event of a trace with all its fields, in time order", "exitscope dump"};
  app.footer(std::string(kDumpHelp) + "\n\n" + kHelpInputs + kDumpInputsText + "\n\n" + kDumpExamples + "\n\n" +
             kDumpExitStatus);
  DumpOptions opt;
  app.add_option("FILE", opt.path, "trace.dat, perf.data or trace text (see Inputs below)")->required();
  std::string limit_text;
  app.add_option("--limit,-n", limit_text, "stop after N events (0 = all)");
  app.add_option("--event,-e", opt.events, "only events with this name (repeatable; kvm_exit or kvm:kvm_exit)");
  app.add_flag("--json", opt.json, "one JSON object per line: ts_ns, cpu, pid, comm, event, system, fields");
  app.add_flag("--ns", opt.ns, "timestamps with nanoseconds (default: microseconds)");
  app.add_option("-j,--threads", opt.threads,
                 "threads in all, the reading one included (default: one per core, up to 8): lines are "
                 "formatted on the cores the reading thread and a compressed trace's decompression leave, "
                 "by the reading thread when none is left (-j 1); the same output in the same order");
  AddClockOptions(app, &opt.clock);
  if (auto rc = ParseArgs(app, argc, argv)) return *rc;
  if (!limit_text.empty()) {
    auto limit = ParseCount("--limit", limit_text, UINT64_MAX >> 1, "a number of events (0 = all)");
    if (!limit.ok()) return PrintError(limit.error());
    opt.limit = *limit;
  }
  return Dump(opt);
}

}  // namespace exitscope
