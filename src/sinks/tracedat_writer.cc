#include "sinks/tracedat_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "format/tracing_data.h"
#include "sources/tracedat/tracedat_format.h"

namespace exitscope {
namespace {

void Put16(std::string& b, uint16_t v) { b.append(reinterpret_cast<const char*>(&v), 2); }
void Put32(std::string& b, uint32_t v) { b.append(reinterpret_cast<const char*>(&v), 4); }
void Put64(std::string& b, uint64_t v) { b.append(reinterpret_cast<const char*>(&v), 8); }
void PutStr(std::string& b, const std::string& s) { b.append(s.c_str(), s.size() + 1); }

Error IoError(const std::string& what, const std::string& path) {
  return MakeError(errno == EACCES || errno == EPERM ? kExitNoPerm : kExitIoErr, "tracedat.write",
                   what + " " + path + ": " + std::strerror(errno),
                   "check that the output directory exists, is writable and has free space");
}

// Compresses `raw` into a zstd frame; the v7 compressed block is {csize u32, usize u32, frame}.
std::string CompressBlock(const uint8_t* raw, size_t n, int level) {
  std::string out(ZSTD_compressBound(n), '\0');
  size_t c = ZSTD_compress(out.data(), out.size(), raw, n, level);
  if (ZSTD_isError(c)) return {};  // cannot happen with a bound-sized buffer; caller checks empty
  out.resize(c);
  std::string block;
  Put32(block, static_cast<uint32_t>(c));
  Put32(block, static_cast<uint32_t>(n));
  block += out;
  return block;
}

// The metadata sections' bodies (trace-cmd.dat.v7.5.txt, the same layout as v6's header parts).
// Header info: "header_page\0", u64 size, text; "header_event\0", u64 size, text.
std::string HeaderInfoBody(const TraceDatMeta& m) {
  std::string body = "header_page";
  body.push_back(0);
  Put64(body, m.header_page.size());
  body += m.header_page;
  body += "header_event";
  body.push_back(0);
  Put64(body, m.header_event.size());
  body += m.header_event;
  return body;
}

// Ftrace events: u32 count, then per format u64 size, text.
std::string FtraceEventsBody(const TraceDatMeta& m) {
  std::string body;
  Put32(body, static_cast<uint32_t>(m.ftrace_formats.size()));
  for (const auto& f : m.ftrace_formats) {
    Put64(body, f.size());
    body += f;
  }
  return body;
}

// Event formats: u32 systems, then per system its name, u32 count, and per format u64 size, text.
std::string EventFormatsBody(const TraceDatMeta& m) {
  std::string body;
  Put32(body, static_cast<uint32_t>(m.systems.size()));
  for (const auto& sys : m.systems) {
    PutStr(body, sys.name);
    Put32(body, static_cast<uint32_t>(sys.formats.size()));
    for (const auto& f : sys.formats) {
      Put64(body, f.size());
      body += f;
    }
  }
  return body;
}

// Kallsyms and printk formats: u32 size, text.
std::string SizedText32(const std::string& text) {
  std::string body;
  Put32(body, static_cast<uint32_t>(text.size()));
  body += text;
  return body;
}

bool WriteFd(int fd, const void* data, size_t n) {
  auto* p = static_cast<const uint8_t*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

}  // namespace

// One CPU's compressed chunks, spooled to an unlinked file until Finish makes them contiguous.
struct TraceDatWriter::CpuSpool {
  int fd = -1;
  std::vector<uint8_t> pending;  // uncompressed pages not yet in a chunk
  uint32_t chunks = 0;
  uint64_t bytes = 0;  // spooled bytes (chunk headers + frames)
  ~CpuSpool() {
    if (fd >= 0) ::close(fd);
  }
};

TraceDatWriter::~TraceDatWriter() {
  if (fd_ >= 0) ::close(fd_);
  // An unfinished file is useless to every reader: do not leave it looking like a trace.
  if (!finished_ && !path_.empty()) ::unlink(path_.c_str());
}

uint32_t TraceDatWriter::StringId(const std::string& s) {
  uint32_t id = static_cast<uint32_t>(strings_.size());
  strings_.append(s.c_str(), s.size() + 1);
  return id;
}

Status TraceDatWriter::WriteAll(const std::string& bytes) {
  if (!WriteFd(fd_, bytes.data(), bytes.size())) return IoError("cannot write", path_);
  offset_ += bytes.size();
  return {};
}

Status TraceDatWriter::WriteSection(uint16_t id, const std::string& description, const std::string& body) {
  std::string block = CompressBlock(reinterpret_cast<const uint8_t*>(body.data()), body.size(), meta_.zstd_level);
  std::string out = SectionHeader(id, kSectionCompressed, description, block.size());
  out += block;
  return WriteAll(out);
}

Result<std::unique_ptr<TraceDatWriter>> TraceDatWriter::Create(const std::string& path, TraceDatMeta meta) {
  std::unique_ptr<TraceDatWriter> w(new TraceDatWriter());
  w->meta_ = std::move(meta);
  const TraceDatMeta& m = w->meta_;
  w->fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (w->fd_ < 0) return IoError("cannot create", path);
  w->path_ = path;
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  for (uint32_t cpu = 0; cpu < m.cpu_count; ++cpu) {
    auto spool = std::make_unique<CpuSpool>();
    spool->fd = ::open(dir.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (spool->fd < 0) {  // filesystems without O_TMPFILE: a named file, unlinked at once
      std::string tmp = path + ".cpu" + std::to_string(cpu) + ".tmp";
      spool->fd = ::open(tmp.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
      if (spool->fd < 0) return IoError("cannot create spool file", tmp);
      ::unlink(tmp.c_str());
    }
    w->spools_.push_back(std::move(spool));
  }

  std::string head(kTracingMagic, kTracingMagicSize);
  PutStr(head, "7");
  head.push_back(0);  // little endian
  head.push_back(static_cast<char>(sizeof(long)));
  Put32(head, m.page_size);
  PutStr(head, "zstd");
  PutStr(head, ZSTD_versionString());
  w->options_field_off_ = head.size();
  Put64(head, 0);  // first options section: patched in Finish
  if (Status s = w->WriteAll(head); !s) return s.error();

  w->header_info_off_ = w->offset_;
  if (Status s = w->WriteSection(kOptHeaderInfo, "headers", HeaderInfoBody(m)); !s) return s.error();
  w->ftrace_off_ = w->offset_;
  if (Status s = w->WriteSection(kOptFtraceEvents, "ftrace events", FtraceEventsBody(m)); !s) {
    return s.error();
  }
  w->events_off_ = w->offset_;
  if (Status s = w->WriteSection(kOptEventFormats, "events format", EventFormatsBody(m)); !s) {
    return s.error();
  }
  if (!m.kallsyms.empty()) {
    w->kallsyms_off_ = w->offset_;
    if (Status s = w->WriteSection(kOptKallsyms, "kallsyms", SizedText32(m.kallsyms)); !s) return s.error();
  }
  if (!m.printk_formats.empty()) {
    w->printk_off_ = w->offset_;
    if (Status s = w->WriteSection(kOptPrintk, "printk", SizedText32(m.printk_formats)); !s) {
      return s.error();
    }
  }
  return w;
}

Status TraceDatWriter::FlushChunk(CpuSpool& spool) {
  if (spool.pending.empty()) return {};
  std::string block = CompressBlock(spool.pending.data(), spool.pending.size(), meta_.zstd_level);
  if (!WriteFd(spool.fd, block.data(), block.size())) return IoError("cannot spool pages of", path_);
  spool.bytes += block.size();
  ++spool.chunks;
  spool.pending.clear();
  return {};
}

Status TraceDatWriter::AddPages(uint32_t cpu, std::span<const uint8_t> pages) {
  if (cpu >= spools_.size() || pages.size() % meta_.page_size != 0) {
    return MakeError(kExitSoftware, "tracedat.bad-pages",
                     "pages for cpu " + std::to_string(cpu) + " are not whole pages of a known CPU");
  }
  CpuSpool& spool = *spools_[cpu];
  const size_t chunk_bytes = static_cast<size_t>(meta_.pages_per_chunk) * meta_.page_size;
  while (!pages.empty()) {
    size_t take = std::min(pages.size(), chunk_bytes - spool.pending.size());
    spool.pending.insert(spool.pending.end(), pages.begin(), pages.begin() + take);
    pages = pages.subspan(take);
    pages_written_ += take / meta_.page_size;
    if (spool.pending.size() == chunk_bytes) {
      if (Status s = FlushChunk(spool); !s) return s;
    }
  }
  return {};
}

// The flyrecord section's place in the file, fixed before any of it is written: the first options
// section (written before it) holds the offset of the second (written after it).
struct TraceDatWriter::FlyrecordLayout {
  uint64_t section_off = 0;        // the flyrecord section header
  std::vector<uint64_t> cpu_off;   // each CPU's chunk count, page aligned
  std::vector<uint64_t> cpu_size;  // each CPU's chunks, without the count
  uint64_t options2_off = 0;       // the options section after the data
};

namespace {

// An option: u16 id, u32 size, data (trace-cmd.dat.v7.5.txt "OPTIONS").
void AppendOption(std::string& opts, uint16_t id, const std::string& data) {
  Put16(opts, id);
  Put32(opts, static_cast<uint32_t>(data.size()));
  opts += data;
}
void AppendOffsetOption(std::string& opts, uint16_t id, uint64_t off) {
  std::string d;
  Put64(d, off);
  AppendOption(opts, id, d);
}
void AppendStringOption(std::string& opts, uint16_t id, const std::string& s) {
  std::string d;
  PutStr(d, s);
  AppendOption(opts, id, d);
}

}  // namespace

std::string TraceDatWriter::SectionHeader(uint16_t id, uint16_t flags, const std::string& description, uint64_t size) {
  std::string sec;
  Put16(sec, id);
  Put16(sec, flags);
  Put32(sec, StringId(description));
  Put64(sec, size);
  return sec;
}

std::string TraceDatWriter::MetadataOptions(const std::vector<std::string>& cpu_stats) const {
  const TraceDatMeta& m = meta_;
  std::string opts;
  AppendOffsetOption(opts, kOptHeaderInfo, header_info_off_);
  AppendOffsetOption(opts, kOptFtraceEvents, ftrace_off_);
  AppendOffsetOption(opts, kOptEventFormats, events_off_);
  if (kallsyms_off_) AppendOffsetOption(opts, kOptKallsyms, kallsyms_off_);
  if (printk_off_) AppendOffsetOption(opts, kOptPrintk, printk_off_);
  if (!m.trace_clock.empty()) AppendStringOption(opts, kOptTraceClock, m.trace_clock);
  if (!m.uname.empty()) AppendStringOption(opts, kOptUname, m.uname);
  if (!m.version.empty()) AppendStringOption(opts, kOptVersion, m.version);
  for (const auto& st : cpu_stats) AppendStringOption(opts, kOptCpuStat, st);
  for (const auto& [id, data] : m.extra_options) AppendOption(opts, id, data);
  AppendOffsetOption(opts, kOptCmdlines, cmdlines_off_);
  std::string count;
  Put32(count, m.cpu_count);
  AppendOption(opts, kOptCpuCount, count);
  return opts;
}

TraceDatWriter::FlyrecordLayout TraceDatWriter::LayOutFlyrecord(uint64_t section_off) const {
  const TraceDatMeta& m = meta_;
  FlyrecordLayout fly;
  fly.section_off = section_off;
  fly.cpu_off.resize(m.cpu_count);
  fly.cpu_size.resize(m.cpu_count);
  // Per-CPU data is page aligned: trace-cmd maps pages by offset.
  uint64_t pos = section_off + kSectionHeaderSize;
  for (uint32_t cpu = 0; cpu < m.cpu_count; ++cpu) {
    pos = (pos + m.page_size - 1) / m.page_size * m.page_size;
    fly.cpu_off[cpu] = pos;
    fly.cpu_size[cpu] = spools_[cpu]->bytes;
    pos += kChunkCountSize + spools_[cpu]->bytes;
  }
  fly.options2_off = pos;
  return fly;
}

Status TraceDatWriter::CopySpool(uint32_t cpu, std::vector<char>& buffer) {
  std::string count;
  Put32(count, spools_[cpu]->chunks);
  if (Status s = WriteAll(count); !s) return s;
  int sfd = spools_[cpu]->fd;
  if (::lseek(sfd, 0, SEEK_SET) < 0) return IoError("cannot rewind spool of", path_);
  for (uint64_t left = spools_[cpu]->bytes; left > 0;) {
    ssize_t r = ::read(sfd, buffer.data(), std::min<uint64_t>(left, buffer.size()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return IoError("cannot read back spool of", path_);
    if (!WriteFd(fd_, buffer.data(), static_cast<size_t>(r))) return IoError("cannot write", path_);
    offset_ += static_cast<uint64_t>(r);
    left -= static_cast<uint64_t>(r);
  }
  return {};
}

Status TraceDatWriter::WriteFlyrecord(const FlyrecordLayout& fly) {
  std::string sec = SectionHeader(kOptBuffer, kSectionCompressed, "flyrecord",
                                  fly.options2_off - fly.section_off - kSectionHeaderSize);
  if (Status s = WriteAll(sec); !s) return s;
  std::vector<char> buffer(1 << 20);
  for (uint32_t cpu = 0; cpu < meta_.cpu_count; ++cpu) {
    if (Status s = WriteAll(std::string(fly.cpu_off[cpu] - offset_, '\0')); !s) return s;
    if (Status s = CopySpool(cpu, buffer); !s) return s;
  }
  return {};
}

std::string TraceDatWriter::BufferOptions(const FlyrecordLayout& fly) const {
  const TraceDatMeta& m = meta_;
  std::string d;
  Put64(d, fly.section_off);
  PutStr(d, m.instance_name);
  PutStr(d, m.clock);
  Put32(d, m.page_size);  // trace-cmd 3.1.6 stores the page size here (not in the v7.5 text)
  Put32(d, m.cpu_count);
  for (uint32_t cpu = 0; cpu < m.cpu_count; ++cpu) {
    Put32(d, cpu);
    Put64(d, fly.cpu_off[cpu]);
    Put64(d, fly.cpu_size[cpu]);
  }
  std::string opts;
  AppendOption(opts, kOptBuffer, d);
  AppendOffsetOption(opts, kOptDone, 0);  // the last options section
  return opts;
}

Status TraceDatWriter::WriteOptionsSection(const std::string& opts) {
  // An options section is never compressed and has section id DONE (0).
  std::string sec = SectionHeader(kOptDone, 0, "options", opts.size());
  sec += opts;
  return WriteAll(sec);
}

Status TraceDatWriter::WriteStringsSection() {
  // The description is itself in the table, so it is added before the table is compressed.
  uint32_t desc = StringId("strings");
  std::string block =
      CompressBlock(reinterpret_cast<const uint8_t*>(strings_.data()), strings_.size(), meta_.zstd_level);
  std::string sec;
  Put16(sec, kOptStrings);
  Put16(sec, kSectionCompressed);
  Put32(sec, desc);
  Put64(sec, block.size());
  sec += block;
  return WriteAll(sec);
}

Status TraceDatWriter::PatchFirstOptionsAndClose(uint64_t options1_off) {
  std::string first;
  Put64(first, options1_off);
  if (::pwrite(fd_, first.data(), first.size(), static_cast<off_t>(options_field_off_)) != 8) {
    return IoError("cannot write", path_);
  }
  if (::fsync(fd_) != 0 || ::close(fd_) != 0) {
    fd_ = -1;
    return IoError("cannot close", path_);
  }
  fd_ = -1;
  finished_ = true;
  return {};
}

// The file's tail, in trace-cmd 3.1.6's order: command lines, options 1 (where the metadata is),
// flyrecord data, options 2 (BUFFER: where each CPU's data is), strings; then the header's pointer to
// options 1.
Status TraceDatWriter::Finish(const std::vector<std::string>& cpu_stats) {
  for (auto& spool : spools_) {
    if (Status s = FlushChunk(*spool); !s) return s;
  }
  // Command lines last among the metadata: a live recording learns thread names while it runs.
  std::string body;
  Put64(body, meta_.cmdlines.size());
  body += meta_.cmdlines;
  cmdlines_off_ = offset_;
  if (Status s = WriteSection(kOptCmdlines, "command lines", body); !s) return s;

  const uint64_t options1_off = offset_;
  std::string opts = MetadataOptions(cpu_stats);
  // DONE carries the next options section's offset, known once this one's size is.
  FlyrecordLayout fly = LayOutFlyrecord(options1_off + kSectionHeaderSize + opts.size() + kDoneOptionSize);
  AppendOffsetOption(opts, kOptDone, fly.options2_off);
  if (Status s = WriteOptionsSection(opts); !s) return s;
  if (Status s = WriteFlyrecord(fly); !s) return s;
  if (Status s = WriteOptionsSection(BufferOptions(fly)); !s) return s;
  // The strings section last: readers scan sections after the options for it.
  if (Status s = WriteStringsSection(); !s) return s;
  return PatchFirstOptionsAndClose(options1_off);
}

}  // namespace exitscope
