#include "sources/tracedat/tracedat_header.h"
#include "sources/tracedat/guest_option.h"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <unordered_set>

#include "base/byte_reader.h"
#include "base/huge_pages.h"
#include "format/tracing_data.h"
#include "sources/tracedat/ring_buffer_page.h"

namespace exitscope {
namespace {

// The whole trace_clock file is well under this (a dozen names); more is damage.
constexpr uint64_t kMaxV6ClockText = 4096;

class HeaderParser {
 public:
  HeaderParser(std::span<const uint8_t> file, const std::string& path, FormatRegistry* formats, TraceMeta* meta,
               Diagnostics* diagnostics)
      : file_(file), path_(path), formats_(formats), meta_(meta), diag_(diagnostics) {}

  Result<TraceDatLayout> Parse();

 private:
  Error Truncated(std::string_view what) const {
    return MakeError(kExitDataErr, "tracedat.truncated", "'" + path_ + "' ends inside " + std::string(what),
                     "the file was cut short (recorder killed, disk full, partial copy); re-record or "
                     "copy it again");
  }
  Error Corrupt(std::string_view what) const {
    return MakeError(kExitDataErr, "tracedat.corrupt", "'" + path_ + "': " + std::string(what),
                     "the file is damaged; `trace-cmd dump --summary` shows how far trace-cmd gets");
  }
  Status ParseV6(ByteReader* r);
  Status ParseV7(ByteReader* r);
  Status ParseOptions(ByteReader* r, uint64_t* next_options);
  Status ParseOption(uint16_t id, std::span<const uint8_t> data);
  // ParseOption's longer cases.
  void ParseGuestOption(std::span<const uint8_t> data);
  void NoteTimeShift();
  Status ParseBufferOption(ByteReader* r);
  Result<std::span<const uint8_t>> LoadSection(uint64_t offset, HugeVector<uint8_t>* storage,
                                               uint16_t* flags = nullptr);
  Status ParseSections();
  void ReconcilePageSizes();
  bool LooksLikePage(uint64_t at, const PageLayout& layout) const;

  std::span<const uint8_t> file_;
  const std::string& path_;
  FormatRegistry* formats_;
  TraceMeta* meta_;
  Diagnostics* diag_;
  TraceDatLayout layout_;
  // v7 section offsets collected from options, parsed once all options are known.
  uint64_t header_info_ = 0, ftrace_ = 0, events_ = 0, kallsyms_ = 0, printk_ = 0, cmdlines_ = 0;
  bool have_buffer_ = false;
  uint64_t buffer_section_ = 0;
  uint64_t cpustat_lost_ = 0;
  // Where the file's metadata sections start: the data of a CPU cannot run into one.
  std::vector<uint64_t> section_offsets_;
  bool have_clock_option_ = false, time_shift_noted_ = false;

  // trace_clock text "local [global] counter …" (or v6's "[global]"): the bracketed clock is in use.
  void NoteClockText(std::string_view s) {
    size_t open = s.find('['), close = s.find(']');
    if (open != std::string_view::npos && close > open)
      meta_->clock = std::string(s.substr(open + 1, close - open - 1));
    else if (meta_->clock.empty())
      meta_->clock = std::string(s.substr(0, s.find_first_of(" \n")));
  }
};

std::string_view CStr(std::span<const uint8_t> data) {
  std::string_view s(reinterpret_cast<const char*>(data.data()), data.size());
  return s.substr(0, s.find('\0'));
}

uint64_t SumCpuStat(std::string_view text, std::string_view key) {
  uint64_t total = 0;
  size_t pos = 0;
  while ((pos = text.find(key, pos)) != std::string_view::npos) {
    if (pos == 0 || text[pos - 1] == '\n') {
      std::string_view rest = text.substr(pos + key.size());
      while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
      uint64_t v = 0;
      std::from_chars(rest.data(), rest.data() + rest.size(), v);
      total += v;
    }
    pos += key.size();
  }
  return total;
}

void HeaderParser::ParseGuestOption(std::span<const uint8_t> data) {
  GuestInfo g;
  RecordedVm vm;
  if (!DecodeGuestOption(data, &g, &vm)) {
    diag_->Bump(DiagId::kTracedatBadGuestOption);
    return;
  }
  // exitscope record's part: which process each vCPU thread was in, as on the live host.
  for (const auto& [tid, vcpu] : vm.vcpu_by_tid) meta_->tgid_by_tid[tid] = vm.pid;
  if (vm.pid > 0 && !vm.comm.empty()) meta_->comm_by_tid.try_emplace(vm.pid, vm.comm);
  g.uuid = vm.uuid;
  g.vmm = vm.vmm;
  meta_->guests.push_back(std::move(g));
}

void HeaderParser::NoteTimeShift() {
  // The offsets map this (guest) file's times onto its peer's (host) clock; they matter only when
  // the two files are read together, and a guest's durations are the same either way.
  diag_->Bump(DiagId::kTracedatTimeShiftIgnored);
  if (time_shift_noted_) return;
  time_shift_noted_ = true;
  meta_->clock_notes.push_back(
      "TIME_SHIFT (guest↔host clock sync) not applied: times are in this "
      "guest's own clock, not its host's");
}

Status HeaderParser::ParseBufferOption(ByteReader* r) {
  if (layout_.version < 7) {
    diag_->Bump(DiagId::kTracedatInstanceSkipped);
    return Status::Ok();
  }
  uint64_t section = r->U64();
  std::string_view name = r->CString();
  std::string_view clock = r->CString();
  uint32_t page_size = r->U32();
  uint32_t count = r->U32();
  if (!r->ok()) return Truncated("its BUFFER option");
  section_offsets_.push_back(section);  // an instance's data, read or not, bounds the others'
  if (have_buffer_ || !name.empty()) {
    diag_->Bump(DiagId::kTracedatInstanceSkipped);
    return Status::Ok();
  }
  have_buffer_ = true;
  buffer_section_ = section;
  if (!clock.empty()) meta_->clock = std::string(clock);
  if (page_size) layout_.page_size = page_size;
  for (uint32_t i = 0; i < count; ++i) {
    TraceDatCpuData c;
    c.cpu = static_cast<int32_t>(r->U32());
    c.offset = r->U64();
    c.size = r->U64();
    if (!r->ok()) return Truncated("its BUFFER option's CPU list");
    layout_.cpus.push_back(c);
  }
  return Status::Ok();
}

Status HeaderParser::ParseOption(uint16_t id, std::span<const uint8_t> data) {
  ByteReader r(data);
  switch (id) {
    case kOptCpuStat:
      // "commit overrun:" (nested writers wrapped the buffer) is a loss too (kernel/trace/trace.c
      // tracing_stats_read); the line-start match keeps it apart from "overrun:".
      cpustat_lost_ += SumCpuStat(CStr(data), "overrun:") + SumCpuStat(CStr(data), "dropped events:") +
                       SumCpuStat(CStr(data), "commit overrun:");
      break;
    case kOptTraceClock:
      // v7: the trace_clock text. v6: empty; the text follows the flyrecord CPU table (ParseV6).
      have_clock_option_ = true;
      NoteClockText(CStr(data));
      break;
    case kOptUname: meta_->kernel = std::string(CStr(data)); break;
    case kOptCpuCount: meta_->cpu_count = static_cast<int>(r.U32()); break;
    case kOptOffset: {
      std::string_view s = CStr(data);
      int64_t v = 0;
      if (std::from_chars(s.data(), s.data() + s.size(), v).ec == std::errc()) layout_.ts_offset_ns += v;
      break;
    }
    case kOptTsc2Nsec:
      layout_.tsc_mult = r.U32();
      layout_.tsc_shift = r.U32();
      layout_.tsc_offset = r.U64();
      if (!r.ok()) layout_.tsc_mult = 0;
      break;
    case kOptGuest: ParseGuestOption(data); break;
    case kOptTimeShift: NoteTimeShift(); break;
    case kOptBuffer: return ParseBufferOption(&r);
    case kOptHeaderInfo: header_info_ = r.U64(); break;
    case kOptFtraceEvents: ftrace_ = r.U64(); break;
    case kOptEventFormats: events_ = r.U64(); break;
    case kOptKallsyms: kallsyms_ = r.U64(); break;
    case kOptPrintk: printk_ = r.U64(); break;
    case kOptCmdlines: cmdlines_ = r.U64(); break;
    case kOptBufferText:
      diag_->Bump(DiagId::kTracedatLatencyBufferSkipped);
      if (uint64_t section = r.U64(); r.ok()) section_offsets_.push_back(section);
      break;
    default: break;  // DATE, HOOK, VERSION, PROCMAPS, TRACEID, STRINGS …: not needed for analysis
  }
  return Status::Ok();
}

Status HeaderParser::ParseOptions(ByteReader* r, uint64_t* next_options) {
  while (true) {
    uint16_t id = r->U16();
    if (!r->ok()) return Truncated("its options");
    if (id == kOptDone && layout_.version < 7) return Status::Ok();
    uint32_t size = r->U32();
    std::span<const uint8_t> data = r->Bytes(size);
    if (!r->ok()) return Truncated("its options");
    if (id == kOptDone) {  // v7: DONE carries the offset of the next options section
      // Any other size hides where the next section (often the BUFFER option locating every
      // CPU's data) is: reading on would give an empty trace, not a damaged one.
      if (size != kDoneOptionSize - kOptionHeaderSize) {
        return Corrupt("its DONE option has size " + std::to_string(size) + ", not " +
                       std::to_string(kDoneOptionSize - kOptionHeaderSize) +
                       ": the next options section (and the CPU data it locates) cannot be found");
      }
      ByteReader d(data);
      *next_options = d.U64();
      return Status::Ok();
    }
    if (Status s = ParseOption(id, data); !s.ok()) return s;
  }
}

Result<std::span<const uint8_t>> HeaderParser::LoadSection(uint64_t offset, HugeVector<uint8_t>* storage,
                                                           uint16_t* flags_out) {
  // v7 section header: u16 id, u16 flags, u32 description string id, u64 size.
  ByteReader r(file_);
  r.Seek(offset);
  r.U16();  // section id; trusted from the option that pointed here
  uint16_t flags = r.U16();
  r.U32();
  uint64_t size = r.U64();
  std::span<const uint8_t> body = r.Bytes(size);
  if (!r.ok()) return Truncated("a metadata section");
  if (flags_out) *flags_out = flags;
  if (!(flags & kSectionCompressed)) return body;
  ByteReader c(body);
  uint32_t csize = c.U32();
  uint32_t usize = c.U32();
  std::span<const uint8_t> data = c.Bytes(csize);
  if (!c.ok()) return Truncated("a compressed section");
  bool plausible = PlausibleUncompressedSize(csize, usize);
  if (plausible) storage->resize(usize);
  Decompressor d(layout_.codec);
  if (!plausible || !d.Decompress(data, *storage)) {
    return MakeError(
        kExitDataErr, "tracedat.bad-compressed-section",
        "'" + path_ + "': a compressed metadata section at offset " + std::to_string(offset) + " does not decompress",
        "the file is damaged (partial copy?); re-copy or re-record it");
  }
  return std::span<const uint8_t>(*storage);
}

Status HeaderParser::ParseSections() {
  HugeVector<uint8_t> storage;
  struct Item {
    uint64_t offset;
    const char* what;
    int kind;
  };
  const Item items[] = {{header_info_, "header info section", 0}, {ftrace_, "ftrace formats section", 1},
                        {events_, "event formats section", 2},    {kallsyms_, "kallsyms section", 3},
                        {printk_, "printk section", 4},           {cmdlines_, "cmdlines section", 5}};
  TracingDataInfo info;
  for (const Item& it : items) {
    if (it.offset == 0) continue;
    section_offsets_.push_back(it.offset);
    auto body = LoadSection(it.offset, &storage);
    if (!body.ok()) return body.error();
    ByteReader r(*body);
    bool ok = true;
    switch (it.kind) {
      case 0:
        ok = ParseHeaderInfo(&r, &info);
        layout_.header_page = info.header_page;
        break;
      case 1: ok = ParseFtraceFormats(&r, formats_, diag_); break;
      case 2: ok = ParseEventSystems(&r, formats_, diag_); break;
      case 3: ok = ParseKallsyms(&r, meta_); break;
      case 4: ok = ParsePrintk(&r); break;
      case 5: ok = ParseCmdlines(&r, meta_); break;
    }
    if (!ok) return Truncated(it.what);
  }
  return Status::Ok();
}

Status HeaderParser::ParseV6(ByteReader* r) {
  TracingDataInfo info;
  if (Status s = ParseTracingData(file_, formats_, meta_, diag_, &info); !s.ok()) {
    Error e = s.error();
    e.message = "'" + path_ + "': " + e.message;
    if (e.tag == "tracing-data.truncated") e.tag = "tracedat.truncated";
    return e;
  }
  layout_.header_page = info.header_page;
  r->Seek(info.consumed);
  uint32_t cpus = r->U32();
  std::string_view marker = r->Text(10);
  if (!r->ok()) return Truncated("its header (CPU count)");
  if (marker == kV6Options) {
    uint64_t unused = 0;
    if (Status s = ParseOptions(r, &unused); !s.ok()) return s;
    marker = r->Text(10);
    if (!r->ok()) return Truncated("its header (after options)");
  }
  if (marker == kV6Latency) {
    diag_->Bump(DiagId::kTracedatLatencyBufferSkipped);
    return Status::Ok();
  }
  if (marker != kV6Flyrecord) return Corrupt("unknown data marker after the header (expected flyrecord)");
  for (uint32_t i = 0; i < cpus; ++i) {
    TraceDatCpuData c;
    c.cpu = static_cast<int32_t>(i);
    c.offset = r->U64();
    c.size = r->U64();
    if (!r->ok()) return Truncated("its flyrecord CPU table");
    layout_.cpus.push_back(c);
  }
  // trace-cmd's v6 writer (save_clock) puts {u64 size, "[clock]"} after the CPU table when it wrote
  // an (empty) TRACECLOCK option; an unreadable one is trace-cmd's old trace_clock bug (it then
  // assumes local), not damage worth failing for.
  if (have_clock_option_) {
    uint64_t size = r->U64();
    std::string_view text = r->Text(static_cast<size_t>(std::min<uint64_t>(size, kMaxV6ClockText)));
    if (r->ok() && size <= kMaxV6ClockText) NoteClockText(text);
  }
  if (meta_->cpu_count == 0) meta_->cpu_count = static_cast<int>(cpus);
  ReconcilePageSizes();
  return Status::Ok();
}

Status HeaderParser::ParseV7(ByteReader* r) {
  std::string_view codec_name = r->CString();
  std::string_view codec_version = r->CString();
  uint64_t options = r->U64();
  if (!r->ok()) return Truncated("its header (compression, options offset)");
  layout_.codec = CodecFromName(codec_name);
  if (layout_.codec == Codec::kUnknown) {
    return MakeError(kExitDataErr, "tracedat.unknown-compression",
                     "'" + path_ + "' is compressed with '" + std::string(codec_name) + " " +
                         std::string(codec_version) + "', which this build does not read",
                     "zlib, zstd and none are supported; `trace-cmd convert --compression none` "
                     "rewrites the file");
  }
  // Options sections form a chain; a damaged next offset may point back into it. Each section is
  // read once: what follows the loop (if anything did) is lost, and said so.
  std::unordered_set<uint64_t> seen;
  while (options != 0) {
    if (!seen.insert(options).second) {
      diag_->Bump(DiagId::kTracedatOptionsLoop);
      break;
    }
    section_offsets_.push_back(options);
    HugeVector<uint8_t> storage;
    auto body = LoadSection(options, &storage);
    if (!body.ok()) return body.error();
    ByteReader o(*body);
    uint64_t next = 0;
    if (Status s = ParseOptions(&o, &next); !s.ok()) return s;
    options = next;
  }
  if (Status s = ParseSections(); !s.ok()) return s;
  if (have_buffer_ && !layout_.cpus.empty()) {
    ByteReader h(file_);
    h.Seek(buffer_section_ + kSectionFlagsOffset);
    uint16_t flags = h.U16();
    if (!h.ok()) return Truncated("its flyrecord section header");
    layout_.data_compressed = (flags & kSectionCompressed) != 0;
    // Compressed chunks have a count besides the size: the prefetcher checks one against the other
    // as it reads them (sources/tracedat/chunk_prefetcher.h).
    if (!layout_.data_compressed) ReconcilePageSizes();
  }
  return Status::Ok();
}

// A kernel ring-buffer page: a stamp, a commit within the page whose bits above the size and the
// two missed-events flags are clear, and a first record. Zeroes, padding between CPUs and the text
// of a metadata section are not.
bool HeaderParser::LooksLikePage(uint64_t at, const PageLayout& layout) const {
  const uint32_t page_size = layout_.page_size;
  if (at > file_.size() || file_.size() - at < page_size) return false;
  auto page = file_.subspan(at, page_size);
  if (uint64_t{layout.commit_offset} + layout.commit_size > page_size || layout.data_offset > page_size) return false;
  uint64_t commit = LoadLe(page.data() + layout.commit_offset, layout.commit_size);
  if (commit & ~(kCommitMask | kMissedEventsFlag | kMissedStoredFlag)) return false;
  if ((commit & kCommitMask) == 0 || (commit & kCommitMask) > page_size - layout.data_offset) return false;
  RingBufferStats scratch;
  PageWalker w;
  uint64_t missed = 0;
  PageRecord rec;
  return w.Begin(page, layout, &scratch, &missed) && w.page_ts() != 0 && w.Next(&rec) && scratch.truncated_pages == 0 &&
         scratch.bad_lengths == 0;
}

void HeaderParser::ReconcilePageSizes() {
  // Uncompressed pages: the BUFFER option's (or v6 table's) size is the only claim on where a
  // CPU's pages end. A size too small (0 in the worst case) would drop the pages up to the next
  // CPU's data or section; one running into them would read another CPU's pages as this one's.
  const uint64_t page_size = layout_.page_size;
  if (page_size == 0 || page_size > (1u << 24)) return;  // the page reader refuses it
  const PageLayout layout = PageLayout::FromHeaderPage(layout_.header_page);
  const uint64_t file_end = file_.size();
  for (TraceDatCpuData& c : layout_.cpus) {
    if (c.offset >= file_end) continue;  // the page reader counts the cut
    uint64_t limit = file_end;
    bool shares_offset = false;  // an empty CPU's offset is the next one's
    auto bound = [&](uint64_t b) {
      if (b > c.offset && b < limit) limit = b;
    };
    for (uint64_t b : section_offsets_) bound(b);
    for (const TraceDatCpuData& o : layout_.cpus) {
      if (&o == &c) continue;
      bound(o.offset);
      if (o.offset == c.offset && o.size > 0) shares_offset = true;
    }
    const uint64_t room = limit - c.offset;
    if (c.size > room) {
      if (limit == file_end) continue;  // past the file's end: counted as truncated data
      diag_->Bump(DiagId::kTracedatCpuSizeMismatch);
      c.size = room / page_size * page_size;
      continue;
    }
    if (shares_offset) continue;
    uint64_t end = c.size;
    for (uint64_t at = (c.size + page_size - 1) / page_size * page_size; at + page_size <= room; at += page_size) {
      if (LooksLikePage(c.offset + at, layout)) end = at + page_size;
    }
    if (end > c.size) {
      diag_->Bump(DiagId::kTracedatCpuSizeMismatch);
      c.size = end;
    }
  }
}

Result<TraceDatLayout> HeaderParser::Parse() {
  if (file_.size() < kTracingMagicSize) {
    return MakeError(kExitDataErr, file_.empty() ? "tracedat.empty" : "tracedat.truncated",
                     "'" + path_ + "' is too short to be a trace.dat (" + std::to_string(file_.size()) + " bytes)",
                     "was the recording interrupted? `trace-cmd record` writes the header at start");
  }
  if (std::memcmp(file_.data(), kTracingMagic, kTracingMagicSize) != 0) {
    return MakeError(kExitDataErr, "tracedat.bad-magic", "'" + path_ + "' is not a trace.dat file",
                     "a trace.dat starts with \\x17\\x08\\x44tracing; pass the file `trace-cmd record` wrote");
  }
  ByteReader r(file_);
  r.Seek(kTracingMagicSize);
  std::string_view version = r.CString();
  uint8_t big_endian = static_cast<uint8_t>(r.U(1));
  layout_.long_size = static_cast<uint32_t>(r.U(1));
  layout_.page_size = r.U32();
  if (!r.ok()) return Truncated("its initial header");
  if (version == "6")
    layout_.version = 6;
  else if (version == "7")
    layout_.version = 7;
  else {
    return MakeError(kExitDataErr, "tracedat.unknown-version",
                     "'" + path_ + "' is trace.dat version '" + std::string(version.substr(0, 16)) +
                         "'; versions 6 and 7 are supported",
                     "convert it with `trace-cmd convert --file-version 7` or record with trace-cmd >= 2.x");
  }
  if (big_endian) {
    return MakeError(kExitDataErr, "tracedat.big-endian", "'" + path_ + "' was recorded on a big-endian host",
                     "only little-endian (x86) recordings are supported");
  }
  Status s = layout_.version == 6 ? ParseV6(&r) : ParseV7(&r);
  if (!s.ok()) return s.error();
  meta_->page_size = layout_.page_size;
  if (cpustat_lost_) {
    meta_->buffer_overwritten = true;
    diag_->Bump(DiagId::kTracedatKernelOverrun, cpustat_lost_);
  }
  return std::move(layout_);
}

}  // namespace

Result<TraceDatLayout> ParseTraceDatHeader(std::span<const uint8_t> file, const std::string& path,
                                           FormatRegistry* formats, TraceMeta* meta, Diagnostics* diagnostics) {
  return HeaderParser(file, path, formats, meta, diagnostics).Parse();
}

}  // namespace exitscope
