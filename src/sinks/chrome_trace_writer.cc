#include "sinks/chrome_trace_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "base/append_number.h"
#include "base/json_schema.h"
#include "base/json_text.h"
#include "decode/exit_qualification.h"
#include "decode/exit_reasons.h"
#include "decode/msr_names.h"

namespace exitscope {
namespace {

std::string Quoted(const std::string& s) {
  std::string q;
  AppendJsonString(&q, s);
  return q;
}

// The detail events of the exit (kvm_msr, kvm_pio …), as the report's breakdowns name them: appended
// to *out (nothing for a kind without a text). Appended piece by piece, not through a format string:
// a timeline writes one per exit, hundreds of thousands.
void AppendDetailText(const ExitDetail& d, std::string* out) {
  auto put = [out](std::string_view piece) { out->append(piece); };
  switch (d.kind) {
    case EventKind::kMsr:
      put("msr "), AppendHex(out, d.key), put(" "), put(MsrName(static_cast<uint32_t>(d.key)));
      put(d.write ? " write" : " read");
      if (d.failed) put(" #GP");
      break;
    case EventKind::kPio:
      put("pio "), AppendHex(out, d.key), put(" "), put(IoPortName(static_cast<uint32_t>(d.key)));
      put(d.write ? " out size " : " in size "), AppendDecimal(out, d.size);
      break;
    case EventKind::kMmio:
      put("mmio "), AppendHex(out, d.key), put(" "), put(MmioTypeName(d.aux)), put(" size "),
          AppendDecimal(out, d.size);
      break;
    case EventKind::kFastMmio: put("fast_mmio "), AppendHex(out, d.key); break;
    case EventKind::kCr: put("cr "), put(CrName(d.size)), put(d.write ? " write" : " read"); break;
    case EventKind::kHypercall:
      put("hypercall "), AppendDecimal(out, d.key), put(" "), put(HypercallName(d.key));
      break;
    case EventKind::kUserspaceExit: put("userspace "), put(KvmExitName(static_cast<uint32_t>(d.key))); break;
    case EventKind::kPageFault: put("page_fault "), AppendHex(out, d.key); break;
    default: break;
  }
}

// "12.345": a time in µs with its ns as three decimals, as the trace-event format reads it.
void AppendUs(std::string* out, uint64_t ns) {
  AppendDecimal(out, ns / 1000);
  out->push_back('.');
  AppendPadded(out, ns % 1000, 3);
}

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::FILE* out, const TraceMeta& meta, const ExitBinner& bins, uint64_t max_exits,
                                     unsigned format_threads)
    : out_(out),
      meta_(meta),
      bins_(bins),
      max_exits_(max_exits),
      // One thread at most: it then takes the batches in order, and writes each as it is formatted.
      work_(std::min(format_threads, 1u), [this](TimelineBatch& b, unsigned) {
        FormatBatch(&b);
        std::fwrite(b.json.data(), 1, b.json.size(), out_);
      }) {
  line_ = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
}

ChromeTraceWriter::~ChromeTraceWriter() = default;

std::string ChromeTraceWriter::Us(uint64_t ns) const {
  std::string us;
  AppendUs(&us, ns);
  return us;
}

const std::string& ChromeTraceWriter::QuotedName(Isa isa, uint32_t reason) {
  auto [it, fresh] = quoted_.try_emplace((uint64_t{static_cast<uint8_t>(isa)} << 32) | reason);
  if (fresh) it->second = Quoted(ExitReasonName(isa, reason));
  return it->second;
}

const std::string& ChromeTraceWriter::QuotedVmmExit(uint32_t userspace_reason) {
  auto [it, fresh] = quoted_.try_emplace((uint64_t{1} << 40) | userspace_reason);
  if (fresh) it->second = Quoted(KvmExitName(userspace_reason));
  return it->second;
}

void ChromeTraceWriter::Flush(size_t at_least) {
  if (line_.size() < at_least) return;
  std::fwrite(line_.data(), 1, line_.size(), out_);
  line_.clear();
}

void ChromeTraceWriter::Event(const std::string& json) {
  if (!first_) line_.append(",\n");
  first_ = false;
  line_.append(json);
  Flush(kFlushBytes);
}

void ChromeTraceWriter::Write(const ExitSample& s, bool timed) {
  if (max_exits_ && written_ >= max_exits_) {
    if (dropped_++ == 0) first_dropped_ts_ns_ = s.ts_ns;
    return;
  }
  ++written_;
  TimelineBatch& b = work_.current();
  if (b.exits.empty()) {
    b.first = first_;
    first_ = false;
  }
  b.exits.push_back({s, bins_.vms().VmId(s.tid), timed});  // VmId memoizes: not on the worker
  if (b.exits.size() >= kBatchExits) HandOver(/*drain=*/false);
}

// The batch filled so far to the formatting (and writing) thread; with `drain`, waits until every
// batch is written. What line_ holds (the file's head) goes out before the first batch: the caller's
// thread writes to out_ only then and after a drain, never while a batch may be written.
void ChromeTraceWriter::HandOver(bool drain) {
  auto written = [](const TimelineBatch&) { return true; };
  if (!work_.current().exits.empty()) {
    if (!line_.empty()) Flush(0);
    work_.Submit(written);
  }
  if (drain) work_.Drain(written);
}

void ChromeTraceWriter::FormatBatch(TimelineBatch* b) {
  b->json.reserve(b->exits.size() * 320);
  for (size_t i = 0; i < b->exits.size(); ++i) {
    if (i > 0 || !b->first) b->json.append(",\n");
    FormatExit(b->exits[i], &b->json);
  }
}

// One exit's element (no separator) appended to *out: on the formatting worker, or in HandOver when
// there is none.
void ChromeTraceWriter::FormatExit(const TimelineExit& e, std::string* out) {
  const ExitSample& s = e.sample;
  const bool timed = e.timed;
  const int64_t pid = e.pid;
  const uint64_t origin = bins_.origin_ns();
  const uint64_t rel = s.ts_ns > origin ? s.ts_ns - origin : 0;
  const std::string& name = QuotedName(s.isa != Isa::kUnknown ? s.isa : meta_.isa_hint, s.reason);
  // Appended piece by piece: a format string parsed per exit took half the time of a timeline.
  auto put = [out](std::string_view piece) { out->append(piece); };
  if (timed) {
    put("{\"ph\":\"X\",\"cat\":\"exit\",\"name\":"), put(name);
  } else {
    // No entry to end it: an instant on its thread, so it is still seen (and counted) where it happened.
    put("{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"untimed_exit\",\"name\":"), put(name);
  }
  put(",\"pid\":"), AppendSigned(out, pid), put(",\"tid\":"), AppendSigned(out, s.tid);
  put(",\"ts\":"), AppendUs(out, rel);
  if (timed) put(",\"dur\":"), AppendUs(out, s.dur_ns);
  put(",\"args\":{\"rip\":\""), AppendHex(out, s.rip), put("\",\"vcpu\":"), AppendSigned(out, s.vcpu_id);
  put(",\"exit_cpu\":"), AppendSigned(out, s.exit_cpu);
  if (timed) {
    put(",\"entry_cpu\":"), AppendSigned(out, s.entry_cpu);
    put(",\"handling_ns\":"), AppendDecimal(out, s.handling_ns());
    put(",\"blocked_ns\":"), AppendDecimal(out, s.blocked_ns);
  } else {
    put(",\"untimed\":true");
  }
  if (s.to_userspace) put(",\"to_vmm\":"), put(QuotedVmmExit(s.userspace_reason));
  bool any = false;
  auto add = [&] {  // the detail text in detail_ as the next element of "details"
    if (detail_.empty()) return;
    put(any ? "," : ",\"details\":[");
    any = true;
    AppendJsonString(out, detail_);
  };
  for (int i = 0; i < s.detail_count; ++i) {
    detail_.clear();
    AppendDetailText(s.details[i], &detail_);
    add();
  }
  QualDetail q[kMaxQualDetails];
  for (int i = 0, n = DecodeQualification(s, q); i < n; ++i) {
    QualDetailText t = DescribeQualDetail(q[i]);
    detail_.assign(t.kind).append(" ").append(t.key);
    if (!t.name.empty()) detail_.append(" ").append(t.name);
    if (!t.access.empty()) detail_.append(" ").append(t.access);
    add();
  }
  if (any) put("]");
  put("}}");
}

namespace {

// Names: a process per VM, a thread per vCPU thread (sorted as the UI lists them).
template <typename Emit>
void EmitNames(const ExitBinner& bins, Emit&& emit) {
  std::map<int64_t, std::string> vms;
  for (const auto& [tid, t] : bins.threads()) {
    const int64_t pid = bins.VmId(t);
    vms.emplace(pid, bins.VmLabel(t));
    emit(
        fmt::format("{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"ts\":0,\"args\":{{\"name\":{}}}}}",
                    pid, tid, Quoted(bins.VcpuLabel(t) + (tid >= 0 ? fmt::format(" (tid {})", tid) : ""))));
    if (t.vcpu_id >= 0 || bins.vms().VcpuIndex(tid, t.vcpu_id)) {
      const int32_t sort = bins.vms().VcpuIndex(tid, t.vcpu_id).value_or(t.vcpu_id);
      emit(
          fmt::format("{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"ts\":0,"
                      "\"args\":{{\"sort_index\":{}}}}}",
                      pid, tid, sort));
    }
  }
  for (const auto& [pid, label] : vms) {
    emit(
        fmt::format("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"tid\":0,\"ts\":0,\"args\":{{\"name\":{}}}}}",
                    pid, Quoted(label)));
  }
}

// exits/s per reason and VM, one counter sample per time bin (each reason a series of the counter);
// `us` formats a time from the origin.
template <typename Emit, typename FormatUs>
void EmitRateCounters(const ExitBinner& bins, Emit&& emit, FormatUs&& us) {
  const double bin_s = static_cast<double>(bins.bin_ns()) * 1e-9;
  std::map<int64_t, std::map<std::string, std::vector<uint64_t>>> per_vm;
  for (const auto& [tid, t] : bins.threads()) {
    auto& reasons = per_vm[bins.VmId(t)];
    for (const auto& [key, c] : t.reasons) {
      auto& v = reasons[ExitReasonName(static_cast<Isa>(key >> 32), static_cast<uint32_t>(key))];
      v.resize(bins.bins_used());
      for (size_t i = 0; i < c.bins.size() && i < v.size(); ++i) v[i] += c.bins[i];
    }
  }
  for (const auto& [pid, reasons] : per_vm) {
    for (size_t i = 0; i <= bins.bins_used(); ++i) {  // a last all-zero sample ends the series
      std::string args;
      for (const auto& [name, v] : reasons) {
        const double rate = i < v.size() ? static_cast<double>(v[i]) / bin_s : 0.0;
        args += fmt::format("{}{}:{:.0f}", args.empty() ? "" : ",", Quoted(name), rate);
      }
      emit(fmt::format("{{\"ph\":\"C\",\"name\":\"exits/s\",\"pid\":{},\"tid\":0,\"ts\":{},\"args\":{{{}}}}}", pid,
                       us(i * bins.bin_ns()), args));
    }
  }
}

}  // namespace

bool ChromeTraceWriter::Finish(const Report& report) {
  HandOver(/*drain=*/true);
  auto emit = [this](const std::string& json) { Event(json); };
  EmitNames(bins_, emit);
  EmitRateCounters(bins_, emit, [this](uint64_t ns) { return Us(ns); });
  if (dropped_) {
    // Where the cap cut the file, visible on the timeline itself.
    const uint64_t at = first_dropped_ts_ns_ > bins_.origin_ns() ? first_dropped_ts_ns_ - bins_.origin_ns() : 0;
    Event(
        fmt::format("{{\"ph\":\"i\",\"s\":\"g\",\"name\":\"exitscope: exits past the cap not written\",\"pid\":0,"
                    "\"tid\":0,\"ts\":{},\"args\":{{\"not_written\":{}}}}}",
                    Us(at), dropped_));
  }
  nlohmann::json other;
  TagSchema(&other, "timeline", kTimelineSchemaVersion);
  other["source"] = report.context.source;
  other["origin_ns"] = bins_.origin_ns();
  other["time_unit"] = "us from origin_ns (the first event)";
  other["exits_reported"] = report.totals.reported;
  other["timed_exits"] = report.totals.all.count;
  other["exits_written"] = written_;
  other["exits_not_written"] = dropped_;
  other["truncated"] = dropped_ != 0;
  other["max_exits"] = max_exits_;
  other["counter_bin_ns"] = bins_.bin_ns();
  other["filters"] = report.context.filters;
  other["partial"] = report.partial;
  line_.append("\n],\"otherData\":{\"exitscope\":")
      .append(other.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
      .append("}}\n");
  Flush(0);
  return std::fflush(out_) == 0 && !std::ferror(out_);
}

}  // namespace exitscope
