#include "format/tracing_data.h"

#include <charconv>
#include <cstring>

#include "base/byte_reader.h"

namespace exitscope {
namespace {

bool ParseOneFormat(std::string_view text, std::string_view system, FormatRegistry* formats, Diagnostics* diagnostics) {
  auto ev = ParseEventFormat(text, system);
  if (!ev.ok()) {
    diagnostics->Bump(DiagId::kFormatUnparsable);
    return false;
  }
  formats->Add(std::move(ev.value()));
  return true;
}

}  // namespace

bool ParseHeaderInfo(ByteReader* r, TracingDataInfo* info) {
  // "header_page\0" + u64 size + text, "header_event\0" + u64 size + text.
  if (r->CString() != "header_page") return false;
  info->header_page = std::string(r->Text(r->U64()));
  if (r->CString() != "header_event") return false;
  info->header_event = std::string(r->Text(r->U64()));
  return r->ok();
}

bool ParseFtraceFormats(ByteReader* r, FormatRegistry* formats, Diagnostics* diagnostics) {
  uint32_t count = r->U32();
  for (uint32_t i = 0; i < count && r->ok(); ++i) {
    std::string_view text = r->Text(r->U64());
    if (r->ok()) ParseOneFormat(text, "ftrace", formats, diagnostics);
  }
  return r->ok();
}

bool ParseEventSystems(ByteReader* r, FormatRegistry* formats, Diagnostics* diagnostics) {
  uint32_t systems = r->U32();
  for (uint32_t s = 0; s < systems && r->ok(); ++s) {
    std::string_view system = r->CString();
    uint32_t count = r->U32();
    for (uint32_t i = 0; i < count && r->ok(); ++i) {
      std::string_view text = r->Text(r->U64());
      if (r->ok()) ParseOneFormat(text, system, formats, diagnostics);
    }
  }
  return r->ok();
}

bool ParseKallsyms(ByteReader* r, TraceMeta* meta) {
  std::string_view text = r->Text(r->U32());
  // Looked at where it lies, not copied: a host's kallsyms runs to several MB, and each fresh page
  // of a copy cost ~10 us to write first on the VMs here (a third of a small trace's report).
  if (meta && meta->isa_hint == Isa::kUnknown) {
    if (text.find(" vmx_vcpu_run") != std::string_view::npos)
      meta->isa_hint = Isa::kVmx;
    else if (text.find(" svm_vcpu_run") != std::string_view::npos)
      meta->isa_hint = Isa::kSvm;
  }
  return r->ok();
}

bool ParsePrintk(ByteReader* r) {
  r->Bytes(r->U32());
  return r->ok();
}

void AddCmdlines(std::string_view text, TraceMeta* meta) {
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    int32_t pid = 0;
    auto [p, ec] = std::from_chars(line.data(), line.data() + line.size(), pid);
    if (ec != std::errc() || p == line.data() + line.size() || *p != ' ') continue;
    meta->comm_by_tid[pid] = std::string(line.substr(p - line.data() + 1));
  }
}

bool ParseCmdlines(ByteReader* r, TraceMeta* meta) {
  std::string_view text = r->Text(r->U64());
  if (r->ok() && meta) AddCmdlines(text, meta);
  return r->ok();
}

Status ParseTracingData(std::span<const uint8_t> bytes, FormatRegistry* formats, TraceMeta* meta,
                        Diagnostics* diagnostics, TracingDataInfo* info) {
  TracingDataInfo local;
  if (!info) info = &local;
  auto truncated = [](std::string_view what) {
    return MakeError(kExitDataErr, "tracing-data.truncated", "tracing data ends inside its " + std::string(what),
                     "the file was cut short (disk full, recorder killed?); re-record it");
  };
  if (bytes.size() < kTracingMagicSize || std::memcmp(bytes.data(), kTracingMagic, kTracingMagicSize)) {
    return MakeError(kExitDataErr, "tracing-data.bad-magic", "tracing data does not start with its magic",
                     "this is not ftrace tracing data (expected \\x17\\x08\\x44tracing)");
  }
  ByteReader r(bytes);
  r.Seek(kTracingMagicSize);
  info->version = std::string(r.CString());
  uint8_t big_endian = static_cast<uint8_t>(r.U(1));
  info->long_size = static_cast<uint32_t>(r.U(1));
  info->page_size = r.U32();
  if (!r.ok()) return truncated("initial header");
  if (big_endian) {
    return MakeError(kExitDataErr, "tracing-data.big-endian", "tracing data was recorded big endian",
                     "only little-endian (x86) recordings are supported");
  }
  if (!ParseHeaderInfo(&r, info)) return truncated("header_page/header_event");
  if (!ParseFtraceFormats(&r, formats, diagnostics)) return truncated("ftrace formats");
  if (!ParseEventSystems(&r, formats, diagnostics)) return truncated("event formats");
  if (!ParseKallsyms(&r, meta)) return truncated("kallsyms");
  if (!ParsePrintk(&r)) return truncated("printk formats");
  // perf's tracing data "0.5" stops here; "0.6" and trace.dat v6 carry saved cmdlines.
  if (info->version != "0.5" && r.remaining() > 0) {
    if (!ParseCmdlines(&r, meta)) return truncated("saved cmdlines");
  }
  info->consumed = r.pos();
  return Status::Ok();
}

}  // namespace exitscope
