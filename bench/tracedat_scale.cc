// tracedat_scale: makes a bigger (or smaller) trace.dat v7 (zstd or zlib) from a real one, for the
// peer benchmark (bench/compare_peers.sh) and for the fuzz seed corpora (fuzz/corpus/).
// In: a trace.dat v7 whose data is zstd- or zlib-compressed chunks (what `trace-cmd record` 3.x
// writes); the output keeps the input's codec (zstd level 1 for the data, zlib level 6) or, with
// --codec, is written in the other one: every compressed section (metadata, strings) and chunk is
// re-compressed and the header names the codec and the linked library's version, as trace-cmd
// writes them (so the zlib reader can be timed on the same events as the zstd one).
// Out: the same file with each CPU's ring-buffer pages repeated N times, every repetition's page
// and absolute timestamps shifted past the previous one, re-compressed 10 pages a chunk; optionally
// only the first K pages per CPU, a kallsyms section cut to a few lines, and only some event formats
// (no ftrace/printk formats) — small fuzz seeds. With --cpus N, the pages are spread over N CPUs:
// each recorded CPU's over N / (CPUs with data) of them, in consecutive runs, so each keeps its
// pages in time order and the merged records are the recording's (page by page in turn, records of
// one time on two pages came out in another order where CPU N - 1 hands over to CPU 0, in
// `trace-cmd report` too): a host with many CPUs, whose report must count the same exits. With
// --interleave as well, page by page in turn: every CPU busy at once, as on a loaded host — for
// timing (a tie at a hand-over may come out the other way round, so the report may differ a little).
// Key assumption: trace-cmd 3.x layout — the metadata sections and the first (uncompressed) options
// section come before the flyrecord section, whose data runs up to a trailing options section
// holding the BUFFER option; everything else (the strings section) follows that and is copied.
// Only the offsets that move are rewritten; nothing else of the file is generated, so Debian's
// trace-cmd reads the result as it reads the original.
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/byte_reader.h"
#include "sources/tracedat/decompressor.h"
#include "sources/tracedat/ring_buffer_page.h"
#include "sources/tracedat/tracedat_format.h"

namespace exitscope {
namespace {

// Option and section ids, header sizes and flags: sources/tracedat/tracedat_format.h.

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "tracedat_scale: %s\n", what.c_str());
  std::exit(1);
}

void PutLe(std::vector<uint8_t>* b, size_t at, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) (*b)[at + i] = static_cast<uint8_t>(v >> (8 * i));
}
void AppendLe(std::vector<uint8_t>* b, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; ++i) b->push_back(static_cast<uint8_t>(v >> (8 * i)));
}

struct CpuData {
  uint32_t cpu = 0;
  uint64_t offset = 0, size = 0;
  size_t field_pos = 0;        // where this CPU's offset/size sit in the tail copy
  std::vector<uint8_t> pages;  // decompressed
};

struct Options {
  uint32_t repeat = 1;
  uint64_t max_pages = ~0ull;            // per CPU, before repetition
  long kallsyms_lines = -1;              // -1: keep the section as it is
  std::vector<std::string> keep_events;  // empty: keep every event format
  Codec codec = Codec::kUnknown;         // kUnknown: the input's
  uint32_t cpus = 0;                     // spread over this many CPUs; 0: as recorded
  bool interleave = false;               // --cpus: page by page in turn, not in consecutive runs
};

// The trailing options section again with a BUFFER option listing `cpus` CPUs (offsets and sizes 0,
// *fields: where each one's offset sits in the result), then the sections after it as they are.
std::vector<uint8_t> SpreadBuffer(const std::vector<uint8_t>& tail, uint32_t cpus, std::vector<size_t>* fields) {
  ByteReader r(tail);
  r.Seek(kSectionHeaderSize - 8);
  const uint64_t opts_end = kSectionHeaderSize + r.U64();
  std::vector<uint8_t> out(tail.begin(), tail.begin() + kSectionHeaderSize);
  r.Seek(kSectionHeaderSize);
  while (r.ok() && r.pos() < opts_end) {
    const uint16_t id = r.U16();
    const uint32_t size = r.U32();
    auto body = r.Bytes(size);
    if (id != kOptBuffer) {
      AppendLe(&out, id, 2);
      AppendLe(&out, size, 4);
      out.insert(out.end(), body.begin(), body.end());
      if (id == kOptDone) break;
      continue;
    }
    ByteReader b(body);
    std::vector<uint8_t> opt;
    AppendLe(&opt, b.U64(), 8);
    for (int i = 0; i < 2; ++i) {  // the instance name and its clock
      std::string_view text = b.CString();
      opt.insert(opt.end(), text.begin(), text.end());
      opt.push_back(0);
    }
    AppendLe(&opt, b.U32(), 4);  // page size
    if (!b.ok()) Die("short BUFFER option");
    AppendLe(&opt, cpus, 4);
    const size_t at = out.size() + kOptionHeaderSize;
    for (uint32_t c = 0; c < cpus; ++c) {
      AppendLe(&opt, c, 4);
      fields->push_back(at + opt.size());
      AppendLe(&opt, 0, 16);
    }
    AppendLe(&out, id, 2);
    AppendLe(&out, opt.size(), 4);
    out.insert(out.end(), opt.begin(), opt.end());
  }
  if (!r.ok() || r.pos() > opts_end) Die("short trailing options section");
  PutLe(&out, kSectionHeaderSize - 8, out.size() - kSectionHeaderSize, 8);
  out.insert(out.end(), tail.begin() + static_cast<ptrdiff_t>(opts_end), tail.end());
  return out;
}

// `plain` compressed with the file's codec into *out (resized to fit): zstd at `zstd_level`, zlib
// at level 6 (compress2, as trace-cmd's zlib plugin calls it).
void Compress(Codec codec, const uint8_t* plain, size_t n, int zstd_level, std::vector<uint8_t>* out) {
  if (codec == Codec::kZlib) {
    uLongf size = compressBound(static_cast<uLong>(n));
    out->resize(size);
    if (compress2(out->data(), &size, plain, static_cast<uLong>(n), 6) != Z_OK) Die("zlib failed");
    out->resize(size);
    return;
  }
  out->resize(ZSTD_compressBound(n));
  const size_t size = ZSTD_compress(out->data(), out->size(), plain, n, zstd_level);
  if (ZSTD_isError(size)) Die("zstd failed");
  out->resize(size);
}

// A metadata section's body, decompressed when its flags say so.
std::vector<uint8_t> SectionBody(const std::vector<uint8_t>& file, uint64_t offset, Decompressor* dec) {
  ByteReader r(file);
  r.Seek(offset);
  r.U16();
  uint16_t flags = r.U16();
  r.U32();
  auto body = r.Bytes(r.U64());
  if (!r.ok()) Die("section past the end of the file");
  if (!(flags & kSectionCompressed)) return {body.begin(), body.end()};
  ByteReader c(body);
  uint32_t csize = c.U32(), usize = c.U32();
  std::vector<uint8_t> out(usize);
  if (!c.ok() || !dec->Decompress(c.Bytes(csize), out)) Die("bad compressed section");
  return out;
}

// A section (header, then `plain`, compressed in `codec` when `flags` say so) appended to *out.
void AppendSection(uint16_t id, uint16_t flags, uint32_t desc, const std::vector<uint8_t>& plain, Codec codec,
                   std::vector<uint8_t>* out) {
  std::vector<uint8_t> packed;
  if (flags & kSectionCompressed) Compress(codec, plain.data(), plain.size(), 3, &packed);
  AppendLe(out, id, 2);
  AppendLe(out, flags, 2);
  AppendLe(out, desc, 4);
  if (!(flags & kSectionCompressed)) {
    AppendLe(out, plain.size(), 8);
    out->insert(out->end(), plain.begin(), plain.end());
    return;
  }
  AppendLe(out, kCompressedBlockHeaderSize + packed.size(), 8);
  AppendLe(out, packed.size(), 4);
  AppendLe(out, plain.size(), 4);
  out->insert(out->end(), packed.begin(), packed.end());
}

// The trailing options section (as it is) and the sections after it (the strings), each compressed
// one re-compressed in `codec`.
std::vector<uint8_t> Transcode(const std::vector<uint8_t>& tail, Decompressor* dec, Codec codec) {
  ByteReader r(tail);
  r.Seek(kSectionHeaderSize - 8);
  uint64_t at = kSectionHeaderSize + r.U64();
  if (!r.ok() || at > tail.size()) Die("short trailing options section");
  std::vector<uint8_t> out(tail.begin(), tail.begin() + static_cast<ptrdiff_t>(at));
  while (at < tail.size()) {
    ByteReader h(tail);
    h.Seek(at);
    const uint16_t id = h.U16(), flags = h.U16();
    const uint32_t desc = h.U32();
    const uint64_t size = h.U64();
    AppendSection(id, flags, desc, SectionBody(tail, at, dec), codec, &out);  // dies on a short section
    at += kSectionHeaderSize + size;
  }
  return out;
}

// Shifts every timestamp of a page by `shift` raw units: the page header's and any absolute
// TIME_STAMP record's (deltas are relative and stay).
void ShiftPage(uint8_t* page, uint32_t page_size, const PageLayout& layout, uint64_t shift) {
  uint64_t ts = LoadLe(page + layout.ts_offset, layout.ts_size) + shift;
  for (uint32_t i = 0; i < layout.ts_size; ++i) page[layout.ts_offset + i] = static_cast<uint8_t>(ts >> (8 * i));
  uint64_t commit = LoadLe(page + layout.commit_offset, layout.commit_size) & kCommitMask;
  uint8_t* p = page + layout.data_offset;
  uint8_t* end = p + std::min<uint64_t>(commit, page_size - layout.data_offset);
  while (end - p >= 4) {
    uint32_t header = static_cast<uint32_t>(LoadLe(p, 4));
    uint32_t type_len = header & 0x1f;
    if (type_len >= 1 && type_len <= kTypeLenDataMax) {
      p += 4 + type_len * 4;
      continue;
    }
    if (end - p < 8) break;
    uint32_t word = static_cast<uint32_t>(LoadLe(p + 4, 4));
    if (type_len == 0) {
      p += 8 + (((word - 4) + 3) & ~3u);
      continue;
    }
    if (type_len == kTypePadding) {
      if ((header >> 5) == 0) break;
      p += 4 + word;
      continue;
    }
    if (type_len == kTypeTimeStamp) {
      uint64_t abs = ((static_cast<uint64_t>(word) << kTsShift) + (header >> 5)) + shift;
      uint32_t h = static_cast<uint32_t>(((abs & ((1u << kTsShift) - 1)) << 5) | kTypeTimeStamp);
      uint32_t w = static_cast<uint32_t>(abs >> kTsShift);
      std::memcpy(p, &h, 4);
      std::memcpy(p + 4, &w, 4);
    }
    p += 8;
  }
}

// Last raw timestamp on a page: the page stamp plus every delta.
uint64_t PageEndTs(const uint8_t* page, uint32_t page_size, const PageLayout& layout) {
  RingBufferStats stats;
  PageWalker w;
  uint64_t missed = 0, last = 0;
  w.Begin({page, page_size}, layout, &stats, &missed);
  last = w.page_ts();
  PageRecord rec;
  while (w.Next(&rec)) last = rec.ts;
  return last;
}

int Run(const std::string& in_path, const std::string& out_path, const Options& opt) {
  std::ifstream in(in_path, std::ios::binary);
  if (!in) Die("cannot open " + in_path);
  std::vector<uint8_t> file((std::istreambuf_iterator<char>(in)), {});
  ByteReader r(file);
  r.Seek(10);
  if (r.CString() != "7") Die("only trace.dat version 7 is supported");
  r.U(1);
  r.U(1);
  uint32_t page_size = r.U32();
  const size_t codec_pos = r.pos();
  const Codec in_codec = CodecFromName(r.CString());
  if (in_codec != Codec::kZstd && in_codec != Codec::kZlib) Die("only zstd- or zlib-compressed trace.dat is supported");
  r.CString();
  size_t first_opts_ptr = r.pos();
  const Codec codec = opt.codec == Codec::kUnknown ? in_codec : opt.codec;
  uint64_t first_opts = r.U64();
  if (!r.ok()) Die("short header");

  // The first options section: section offsets (to relocate) and DONE → the trailing options.
  r.Seek(first_opts);
  r.U16();
  uint16_t flags = r.U16();
  r.U32();
  uint64_t opts_size = r.U64();
  if (!r.ok() || (flags & kSectionCompressed)) Die("first options section missing or compressed");
  size_t opts_end = r.pos() + opts_size;
  struct Reloc {
    size_t pos;
    uint64_t value;
  };
  std::vector<Reloc> relocs;
  uint64_t kallsyms_off = 0, header_info_off = 0, events_off = 0, ftrace_off = 0, printk_off = 0;
  size_t done_pos = 0, cpu_count_pos = 0;
  while (r.ok() && r.pos() < opts_end) {
    uint16_t id = r.U16();
    uint32_t size = r.U32();
    size_t at = r.pos();
    r.Bytes(size);
    if (id == kOptDone) {
      done_pos = at;
      break;
    }
    if (id == kOptCpuCount && size == 4) cpu_count_pos = at;
    if (id >= kOptHeaderInfo && id <= kOptCmdlines && id != kOptDone) {
      uint64_t v = LoadLe(file.data() + at, 8);
      relocs.push_back({at, v});
      if (id == kOptKallsyms) kallsyms_off = v;
      if (id == kOptHeaderInfo) header_info_off = v;
      if (id == kOptEventFormats) events_off = v;
      if (id == kOptFtraceEvents) ftrace_off = v;
      if (id == kOptPrintk) printk_off = v;
    }
  }
  if (!done_pos) Die("no DONE option in the first options section");
  uint64_t tail_off = LoadLe(file.data() + done_pos, 8);

  // Header page layout, from the header-info section ("header_page\0", u64 size, text …).
  Decompressor dec(in_codec);
  PageLayout layout;
  {
    std::vector<uint8_t> body = SectionBody(file, header_info_off, &dec);
    ByteReader h(body);
    h.CString();
    std::string_view text = h.Text(h.U64());
    if (!h.ok()) Die("cannot read the header_page section");
    layout = PageLayout::FromHeaderPage(text);
  }

  // Trailing options: the BUFFER option with the flyrecord section and each CPU's data.
  ByteReader t(file);
  t.Seek(tail_off + kSectionHeaderSize);
  uint64_t buffer_section = 0;
  std::vector<CpuData> cpus;
  size_t tail_done = 0;
  while (t.ok()) {
    uint16_t id = t.U16();
    uint32_t size = t.U32();
    size_t at = t.pos();
    if (id == kOptDone) {
      tail_done = at;
      break;
    }
    if (id == kOptBuffer) {
      ByteReader b(std::span<const uint8_t>(file).subspan(at, size));
      buffer_section = b.U64();
      if (!b.CString().empty()) Die("first BUFFER is not the top instance");
      b.CString();
      b.U32();
      uint32_t count = b.U32();
      for (uint32_t i = 0; i < count && b.ok(); ++i) {
        CpuData c;
        c.cpu = b.U32();
        c.field_pos = at + b.pos() - tail_off;
        c.offset = b.U64();
        c.size = b.U64();
        cpus.push_back(std::move(c));
      }
      if (!b.ok()) Die("short BUFFER option");
    }
    t.Bytes(size);
  }
  if (!tail_done || !buffer_section || cpus.empty()) Die("no BUFFER option after the data");

  // Decompress every CPU's chunks; find the time span of the whole recording.
  uint64_t min_ts = ~0ull, max_ts = 0;
  for (CpuData& c : cpus) {
    ByteReader d(file);
    d.Seek(c.offset);
    uint32_t chunks = d.U32();
    for (uint32_t i = 0; i < chunks && d.ok(); ++i) {
      uint32_t csize = d.U32(), usize = d.U32();
      auto data = d.Bytes(csize);
      size_t at = c.pages.size();
      c.pages.resize(at + usize);
      if (!d.ok() || !dec.Decompress(data, std::span<uint8_t>(c.pages).subspan(at))) Die("bad chunk");
    }
    uint64_t n = std::min<uint64_t>(c.pages.size() / page_size, opt.max_pages);
    c.pages.resize(n * page_size);
    for (uint64_t p = 0; p < n; ++p) {
      const uint8_t* page = c.pages.data() + p * page_size;
      min_ts = std::min(min_ts, LoadLe(page + layout.ts_offset, layout.ts_size));
      max_ts = std::max(max_ts, PageEndTs(page, page_size, layout));
    }
  }
  // One millisecond (in ns clocks) between repetitions keeps them apart without a long idle gap.
  uint64_t shift = max_ts - min_ts + 1'000'000;

  // Prefix: the file up to the flyrecord section, with metadata sections optionally cut down
  // (small fuzz seeds). Replacements are applied back to front, so earlier offsets stay valid.
  struct Replacement {
    uint64_t offset, old_size;
    std::vector<uint8_t> section;
  };
  std::vector<Replacement> reps;
  auto replace = [&](uint64_t offset, const std::vector<uint8_t>& plain) {
    ByteReader k(file);
    k.Seek(offset);
    uint16_t id = k.U16();
    k.U16();
    uint32_t desc = k.U32();
    uint64_t size = k.U64();
    Replacement rep{offset, kSectionHeaderSize + size, {}};
    AppendSection(id, kSectionCompressed, desc, plain, codec, &rep.section);
    reps.push_back(std::move(rep));
  };
  if (opt.kallsyms_lines >= 0 && kallsyms_off) {
    std::vector<uint8_t> raw = SectionBody(file, kallsyms_off, &dec);
    if (raw.size() < 4) Die("bad kallsyms section");
    std::string text(raw.begin() + 4, raw.end());
    std::string kept;
    size_t pos = 0;
    for (long n = 0; pos < text.size();) {
      size_t nl = text.find('\n', pos);
      std::string line = text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos + 1);
      pos = nl == std::string::npos ? text.size() : nl + 1;
      if (n < opt.kallsyms_lines || line.find("_vcpu_run") != std::string::npos) {
        kept += line;
        ++n;
      }
    }
    std::vector<uint8_t> plain;
    AppendLe(&plain, kept.size(), 4);
    plain.insert(plain.end(), kept.begin(), kept.end());
    replace(kallsyms_off, plain);
  }
  if (!opt.keep_events.empty()) {
    // Event formats: u32 systems, per system {name\0, u32 count, per event {u64 size, text}}.
    std::vector<uint8_t> raw = SectionBody(file, events_off, &dec), plain;
    ByteReader e(raw);
    uint32_t systems = e.U32();
    AppendLe(&plain, systems, 4);
    for (uint32_t sys = 0; sys < systems && e.ok(); ++sys) {
      std::string_view name = e.CString();
      plain.insert(plain.end(), name.begin(), name.end());
      plain.push_back(0);
      uint32_t count = e.U32();
      std::vector<std::string_view> kept;
      for (uint32_t i = 0; i < count && e.ok(); ++i) {
        std::string_view text = e.Text(e.U64());
        std::string_view first = text.substr(0, text.find('\n'));
        for (const std::string& k : opt.keep_events) {
          if (first == "name: " + k) kept.push_back(text);
        }
      }
      AppendLe(&plain, kept.size(), 4);
      for (std::string_view text : kept) {
        AppendLe(&plain, text.size(), 8);
        plain.insert(plain.end(), text.begin(), text.end());
      }
    }
    if (!e.ok()) Die("bad event formats section");
    replace(events_off, plain);
    // No ftrace formats and no printk formats: neither is needed to read kvm events.
    std::vector<uint8_t> none(4, 0);
    if (ftrace_off) replace(ftrace_off, none);
    if (printk_off) replace(printk_off, none);
  }
  if (codec != in_codec) {
    // Every compressed metadata section in the new codec (those cut down above already are).
    for (const Reloc& rel : relocs) {
      if (std::any_of(reps.begin(), reps.end(), [&](const Replacement& x) { return x.offset == rel.value; })) continue;
      if (LoadLe(file.data() + rel.value + kSectionFlagsOffset, 2) & kSectionCompressed) {
        replace(rel.value, SectionBody(file, rel.value, &dec));
      }
    }
    // The header's codec name and version.
    std::vector<uint8_t> names;
    const std::string name = codec == Codec::kZlib ? "zlib" : "zstd";
    const std::string version = codec == Codec::kZlib ? zlibVersion() : ZSTD_versionString();
    names.insert(names.end(), name.begin(), name.end());
    names.push_back(0);
    names.insert(names.end(), version.begin(), version.end());
    names.push_back(0);
    reps.push_back({codec_pos, first_opts_ptr - codec_pos, std::move(names)});
  }
  std::sort(reps.begin(), reps.end(), [](const Replacement& a, const Replacement& b) { return a.offset > b.offset; });
  std::vector<uint8_t> out(file.begin(), file.begin() + buffer_section);
  for (const Replacement& rep : reps) {
    out.erase(out.begin() + rep.offset, out.begin() + rep.offset + rep.old_size);
    out.insert(out.begin() + rep.offset, rep.section.begin(), rep.section.end());
  }
  auto moved = [&](uint64_t off) {
    int64_t d = 0;
    for (const Replacement& rep : reps) {
      if (off > rep.offset) d += static_cast<int64_t>(rep.section.size()) - static_cast<int64_t>(rep.old_size);
    }
    return off + d;
  };
  if (!reps.empty()) {
    PutLe(&out, moved(first_opts_ptr), moved(first_opts), 8);
    for (const Reloc& rel : relocs) PutLe(&out, moved(rel.pos), moved(rel.value), 8);
  }
  if (opt.cpus) {
    if (!cpu_count_pos) Die("no CPUCOUNT option to spread the CPUs in");
    if (opt.cpus < cpus.size()) Die("--cpus is below the CPUs with data");
    PutLe(&out, moved(cpu_count_pos), opt.cpus, 4);
  }
  uint64_t new_section = out.size();

  // The flyrecord section: its header, padding to a page boundary, then per CPU the chunks.
  out.insert(out.end(), file.begin() + buffer_section, file.begin() + buffer_section + kSectionHeaderSize);
  while (out.size() % page_size) out.push_back(0);
  std::FILE* f = std::fopen(out_path.c_str(), "wb");
  if (!f) Die("cannot create " + out_path);
  std::fwrite(out.data(), 1, out.size(), f);
  uint64_t pos = out.size();
  std::vector<uint8_t> tail(file.begin() + tail_off, file.end());
  if (codec != in_codec) tail = Transcode(tail, &dec, codec);
  // What each CPU written holds: `count` of a recorded CPU's repeated pages, from `first` on, every
  // `stride`th (all of them but with --cpus); its offset and size go to `field` in the tail.
  struct Target {
    const CpuData* from;
    uint64_t first, count, stride;
    size_t field;
  };
  std::vector<Target> targets;
  auto repeated = [&](const CpuData& c) { return c.pages.size() / page_size * opt.repeat; };
  if (opt.cpus) {
    std::vector<size_t> fields;
    tail = SpreadBuffer(tail, opt.cpus, &fields);
    const uint32_t per = opt.cpus / static_cast<uint32_t>(cpus.size());
    for (uint32_t t = 0; t < opt.cpus; ++t) {
      const size_t from = std::min<size_t>(t / per, cpus.size() - 1);
      const uint64_t runs = from + 1 == cpus.size() ? opt.cpus - per * from : per, run = t - per * from;
      const uint64_t all = repeated(cpus[from]);
      if (opt.interleave)
        targets.push_back({&cpus[from], run, all > run ? (all - run + runs - 1) / runs : 0, runs, fields[t]});
      else
        targets.push_back({&cpus[from], all * run / runs, all * (run + 1) / runs - all * run / runs, 1, fields[t]});
    }
  } else {
    for (const CpuData& c : cpus) targets.push_back({&c, 0, repeated(c), 1, c.field_pos});
  }
  std::vector<uint8_t> chunk(kTraceCmdPagesPerChunk * page_size), packed;
  for (const Target& target : targets) {
    const CpuData& c = *target.from;
    uint64_t pages = c.pages.size() / page_size;
    uint64_t total = target.count;
    uint32_t chunks = static_cast<uint32_t>((total + kTraceCmdPagesPerChunk - 1) / kTraceCmdPagesPerChunk);
    uint64_t start = pos;
    std::vector<uint8_t> hdr;
    AppendLe(&hdr, chunks, kChunkCountSize);
    std::fwrite(hdr.data(), 1, kChunkCountSize, f);
    pos += kChunkCountSize;
    uint64_t filled = 0;
    for (uint64_t n = 0; n < total; ++n) {
      const uint64_t i = target.first + n * target.stride;
      uint64_t rep = i / pages;
      uint8_t* page = chunk.data() + filled * page_size;
      std::memcpy(page, c.pages.data() + (i % pages) * page_size, page_size);
      if (rep) ShiftPage(page, page_size, layout, rep * shift);
      if (++filled == kTraceCmdPagesPerChunk || n + 1 == total) {
        Compress(codec, chunk.data(), filled * page_size, 1, &packed);
        const size_t csize = packed.size();
        hdr.clear();
        AppendLe(&hdr, csize, 4);
        AppendLe(&hdr, filled * page_size, 4);
        std::fwrite(hdr.data(), 1, kCompressedBlockHeaderSize, f);
        std::fwrite(packed.data(), 1, csize, f);
        pos += kCompressedBlockHeaderSize + csize;
        filled = 0;
      }
    }
    // trace-cmd 3.1 stores the data size without the leading chunk count.
    PutLe(&tail, target.field, start, 8);
    PutLe(&tail, target.field + 8, pos - start - kChunkCountSize, 8);
  }
  // Flyrecord section size, the BUFFER's section offset, and DONE → the moved trailing options.
  uint64_t section_size = pos - (new_section + kSectionHeaderSize);
  std::fseek(f, static_cast<long>(new_section + kSectionHeaderSize - 8), SEEK_SET);  // its u64 size
  std::vector<uint8_t> sz;
  AppendLe(&sz, section_size, 8);
  std::fwrite(sz.data(), 1, 8, f);
  std::vector<uint8_t> done;
  AppendLe(&done, pos, 8);
  std::fseek(f, static_cast<long>(moved(done_pos)), SEEK_SET);
  std::fwrite(done.data(), 1, 8, f);
  std::fseek(f, static_cast<long>(pos), SEEK_SET);
  // The BUFFER option's first field: the flyrecord section offset.
  for (size_t i = kSectionHeaderSize; i + kOptionHeaderSize <= tail.size();) {
    uint16_t id = static_cast<uint16_t>(LoadLe(tail.data() + i, 2));
    uint32_t size = static_cast<uint32_t>(LoadLe(tail.data() + i + 2, 4));
    if (id == kOptBuffer) PutLe(&tail, i + kOptionHeaderSize, new_section, 8);
    if (id == kOptDone) break;
    i += kOptionHeaderSize + size;
  }
  std::fwrite(tail.data(), 1, tail.size(), f);
  if (std::fclose(f) != 0) Die("write failed");
  return 0;
}

}  // namespace
}  // namespace exitscope

int main(int argc, char** argv) {
  exitscope::Options opt;
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repeat" && i + 1 < argc)
      opt.repeat = static_cast<uint32_t>(std::stoul(argv[++i]));
    else if (a == "--max-pages" && i + 1 < argc)
      opt.max_pages = std::stoull(argv[++i]);
    else if (a == "--codec" && i + 1 < argc)
      opt.codec = exitscope::CodecFromName(argv[++i]);
    else if (a == "--cpus" && i + 1 < argc)
      opt.cpus = static_cast<uint32_t>(std::stoul(argv[++i]));
    else if (a == "--interleave")
      opt.interleave = true;
    else if (a == "--kallsyms-lines" && i + 1 < argc)
      opt.kallsyms_lines = std::stol(argv[++i]);
    else if (a == "--keep-events" && i + 1 < argc) {
      std::string list = argv[++i];
      for (size_t p = 0; p <= list.size();) {
        size_t c = std::min(list.find(',', p), list.size());
        opt.keep_events.push_back(list.substr(p, c - p));
        p = c + 1;
      }
    } else
      files.push_back(a);
  }
  if (files.size() != 2 || opt.repeat == 0 ||
      (opt.codec != exitscope::Codec::kUnknown && opt.codec != exitscope::Codec::kZstd &&
       opt.codec != exitscope::Codec::kZlib)) {
    std::fprintf(stderr,
                 "usage: tracedat_scale [--repeat N] [--codec zstd|zlib] [--max-pages K] [--kallsyms-lines L] "
                 "[--keep-events a,b] [--cpus N [--interleave]]"
                 " IN.dat OUT.dat\n"
                 "  repeats each CPU's pages N times with shifted timestamps (trace.dat v7, zstd or zlib: the input's\n"
                 "  unless --codec says); --cpus spreads them over N CPUs, in consecutive runs (--interleave: page by\n"
                 "  page in turn, every CPU busy at once; for timing)\n");
    return 64;
  }
  return exitscope::Run(files[0], files[1], opt);
}
