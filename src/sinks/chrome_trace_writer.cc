#include "sinks/chrome_trace_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "base/json_schema.h"
#include "decode/exit_qualification.h"
#include "decode/exit_reasons.h"
#include "decode/msr_names.h"

namespace exitscope {
namespace {

std::string Quoted(const std::string& s) {
  // Printable ASCII other than '"' and '\\' is written as it is by the JSON dump too: the common case
  // (every detail text) skips building a json value.
  if (std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; }))
    return '"' + s + '"';
  return nlohmann::json(s).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// The detail events of the exit (kvm_msr, kvm_pio …), as the report's breakdowns name them.
std::string DetailText(const ExitDetail& d) {
  switch (d.kind) {
    case EventKind::kMsr:
      return fmt::format("msr {:#x} {} {}{}", d.key, MsrName(static_cast<uint32_t>(d.key)), d.write ? "write" : "read",
                         d.failed ? " #GP" : "");
    case EventKind::kPio:
      return fmt::format("pio {:#x} {} {} size {}", d.key, IoPortName(static_cast<uint32_t>(d.key)),
                         d.write ? "out" : "in", d.size);
    case EventKind::kMmio: return fmt::format("mmio {:#x} {} size {}", d.key, MmioTypeName(d.aux), d.size);
    case EventKind::kFastMmio: return fmt::format("fast_mmio {:#x}", d.key);
    case EventKind::kCr: return fmt::format("cr {} {}", CrName(d.size), d.write ? "write" : "read");
    case EventKind::kHypercall: return fmt::format("hypercall {} {}", d.key, HypercallName(d.key));
    case EventKind::kUserspaceExit: return fmt::format("userspace {}", KvmExitName(static_cast<uint32_t>(d.key)));
    case EventKind::kPageFault: return fmt::format("page_fault {:#x}", d.key);
    default: return {};
  }
}

}  // namespace

ChromeTraceWriter::ChromeTraceWriter(std::FILE* out, const TraceMeta& meta, const ExitBinner& bins, uint64_t max_exits)
    : out_(out), meta_(meta), bins_(bins), max_exits_(max_exits) {
  std::fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", out_);
}

std::string ChromeTraceWriter::Us(uint64_t ns) const { return fmt::format("{}.{:03}", ns / 1000, ns % 1000); }

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

void ChromeTraceWriter::Event(const std::string& json) {
  if (!first_) std::fputs(",\n", out_);
  first_ = false;
  std::fwrite(json.data(), 1, json.size(), out_);
}

void ChromeTraceWriter::Write(const ExitSample& s, bool timed) {
  if (max_exits_ && written_ >= max_exits_) {
    if (dropped_++ == 0) first_dropped_ts_ns_ = s.ts_ns;
    return;
  }
  ++written_;
  const uint64_t origin = bins_.origin_ns();
  const uint64_t rel = s.ts_ns > origin ? s.ts_ns - origin : 0;
  const int64_t pid = bins_.vms().VmId(s.tid);
  line_.clear();
  const std::string& name = QuotedName(s.isa != Isa::kUnknown ? s.isa : meta_.isa_hint, s.reason);
  // Times in µs with ns decimals, as Us() writes them, formatted in place.
  if (timed) {
    fmt::format_to(std::back_inserter(line_),
                   "{{\"ph\":\"X\",\"cat\":\"exit\",\"name\":{},\"pid\":{},\"tid\":{},"
                   "\"ts\":{}.{:03},\"dur\":{}.{:03},\"args\":{{\"rip\":\"{:#x}\",\"vcpu\":{},\"exit_cpu\":{},"
                   "\"entry_cpu\":{},\"handling_ns\":{},\"blocked_ns\":{}",
                   name, pid, s.tid, rel / 1000, rel % 1000, s.dur_ns / 1000, s.dur_ns % 1000, s.rip, s.vcpu_id,
                   s.exit_cpu, s.entry_cpu, s.handling_ns(), s.blocked_ns);
  } else {
    // No entry to end it: an instant on its thread, so it is still seen (and counted) where it happened.
    fmt::format_to(std::back_inserter(line_),
                   "{{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"untimed_exit\",\"name\":{},"
                   "\"pid\":{},\"tid\":{},\"ts\":{}.{:03},\"args\":{{\"rip\":\"{:#x}\",\"vcpu\":{},\"exit_cpu\":{},"
                   "\"untimed\":true",
                   name, pid, s.tid, rel / 1000, rel % 1000, s.rip, s.vcpu_id, s.exit_cpu);
  }
  if (s.to_userspace) fmt::format_to(std::back_inserter(line_), ",\"to_vmm\":{}", QuotedVmmExit(s.userspace_reason));
  std::string details;
  auto add = [&](const std::string& d) {
    if (d.empty()) return;
    details += (details.empty() ? "" : ",") + Quoted(d);
  };
  for (int i = 0; i < s.detail_count; ++i) add(DetailText(s.details[i]));
  QualDetail q[kMaxQualDetails];
  for (int i = 0, n = DecodeQualification(s, q); i < n; ++i) {
    QualDetailText t = DescribeQualDetail(q[i]);
    add(fmt::format("{} {}{}{}", t.kind, t.key, t.name.empty() ? "" : " " + t.name,
                    t.access.empty() ? "" : " " + t.access));
  }
  if (!details.empty()) line_ += ",\"details\":[" + details + "]";
  line_ += "}}";
  Event(line_);
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
  std::string tail =
      "\n],\"otherData\":{\"exitscope\":" + other.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
      "}}\n";
  std::fwrite(tail.data(), 1, tail.size(), out_);
  return std::fflush(out_) == 0 && !std::ferror(out_);
}

}  // namespace exitscope
