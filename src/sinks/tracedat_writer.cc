#include "sinks/tracedat_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace exitscope {
namespace {

// trace-cmd.dat v7 (Documentation/trace-cmd/trace-cmd.dat.v7.5.txt, trace-cmd 3.1.x).
constexpr uint8_t kMagic[] = {0x17, 0x08, 0x44};
constexpr uint16_t kSectionFlagCompressed = 1;
// Option / section ids (the same numbering serves both).
constexpr uint16_t kOptDone = 0;
constexpr uint16_t kOptCpuStat = 2;
constexpr uint16_t kOptBuffer = 3;
constexpr uint16_t kOptTraceClock = 4;
constexpr uint16_t kOptUname = 5;
constexpr uint16_t kOptCpuCount = 8;
constexpr uint16_t kOptVersion = 9;
constexpr uint16_t kOptStrings = 15;
constexpr uint16_t kOptHeaderInfo = 16;
constexpr uint16_t kOptFtraceEvents = 17;
constexpr uint16_t kOptEventFormats = 18;
constexpr uint16_t kOptKallsyms = 19;
constexpr uint16_t kOptPrintk = 20;
constexpr uint16_t kOptCmdlines = 21;
// The section header is id(2) flags(2) description string id(4) size(8): trace-cmd 3.1.6 writes an
// 8-byte size although the v7.5 text says 4 (checked on a file it wrote).
constexpr uint64_t kSectionHeaderBytes = 16;

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
  uint64_t bytes = 0;            // spooled bytes (chunk headers + frames)
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

Status TraceDatWriter::WriteSection(uint16_t id, const std::string& description,
                                    const std::string& body) {
  std::string block = CompressBlock(reinterpret_cast<const uint8_t*>(body.data()), body.size(),
                                    meta_.zstd_level);
  std::string out;
  Put16(out, id);
  Put16(out, kSectionFlagCompressed);
  Put32(out, StringId(description));
  Put64(out, block.size());
  out += block;
  return WriteAll(out);
}

Result<std::unique_ptr<TraceDatWriter>> TraceDatWriter::Create(const std::string& path,
                                                               TraceDatMeta meta) {
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

  std::string head(reinterpret_cast<const char*>(kMagic), sizeof kMagic);
  head += "tracing";
  PutStr(head, "7");
  head.push_back(0);  // little endian
  head.push_back(static_cast<char>(sizeof(long)));
  Put32(head, m.page_size);
  PutStr(head, "zstd");
  PutStr(head, ZSTD_versionString());
  w->options_field_off_ = head.size();
  Put64(head, 0);  // first options section: patched in Finish
  if (Status s = w->WriteAll(head); !s) return s.error();

  std::string body = "header_page";
  body.push_back(0);
  Put64(body, m.header_page.size());
  body += m.header_page;
  body += "header_event";
  body.push_back(0);
  Put64(body, m.header_event.size());
  body += m.header_event;
  w->header_info_off_ = w->offset_;
  if (Status s = w->WriteSection(kOptHeaderInfo, "headers", body); !s) return s.error();

  body.clear();
  Put32(body, static_cast<uint32_t>(m.ftrace_formats.size()));
  for (const auto& f : m.ftrace_formats) {
    Put64(body, f.size());
    body += f;
  }
  w->ftrace_off_ = w->offset_;
  if (Status s = w->WriteSection(kOptFtraceEvents, "ftrace events", body); !s) return s.error();

  body.clear();
  Put32(body, static_cast<uint32_t>(m.systems.size()));
  for (const auto& sys : m.systems) {
    PutStr(body, sys.name);
    Put32(body, static_cast<uint32_t>(sys.formats.size()));
    for (const auto& f : sys.formats) {
      Put64(body, f.size());
      body += f;
    }
  }
  w->events_off_ = w->offset_;
  if (Status s = w->WriteSection(kOptEventFormats, "events format", body); !s) return s.error();

  if (!m.kallsyms.empty()) {
    body.clear();
    Put32(body, static_cast<uint32_t>(m.kallsyms.size()));
    body += m.kallsyms;
    w->kallsyms_off_ = w->offset_;
    if (Status s = w->WriteSection(kOptKallsyms, "kallsyms", body); !s) return s.error();
  }
  if (!m.printk_formats.empty()) {
    body.clear();
    Put32(body, static_cast<uint32_t>(m.printk_formats.size()));
    body += m.printk_formats;
    w->printk_off_ = w->offset_;
    if (Status s = w->WriteSection(kOptPrintk, "printk", body); !s) return s.error();
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

Status TraceDatWriter::Finish(const std::vector<std::string>& cpu_stats) {
  for (auto& spool : spools_) {
    if (Status s = FlushChunk(*spool); !s) return s;
  }
  const TraceDatMeta& m = meta_;
  // Command lines last among the metadata: a live recording learns thread names while it runs.
  std::string body;
  Put64(body, m.cmdlines.size());
  body += m.cmdlines;
  cmdlines_off_ = offset_;
  if (Status s = WriteSection(kOptCmdlines, "command lines", body); !s) return s;
  // Options section 1: where the metadata sections are, plus host facts.
  uint64_t options1_off = offset_;
  std::string opts;
  auto option = [&opts](uint16_t id, const std::string& data) {
    Put16(opts, id);
    Put32(opts, static_cast<uint32_t>(data.size()));
    opts += data;
  };
  auto offset_option = [&option](uint16_t id, uint64_t off) {
    std::string d;
    Put64(d, off);
    option(id, d);
  };
  auto string_option = [&option](uint16_t id, const std::string& s) {
    std::string d;
    PutStr(d, s);
    option(id, d);
  };
  offset_option(kOptHeaderInfo, header_info_off_);
  offset_option(kOptFtraceEvents, ftrace_off_);
  offset_option(kOptEventFormats, events_off_);
  if (kallsyms_off_) offset_option(kOptKallsyms, kallsyms_off_);
  if (printk_off_) offset_option(kOptPrintk, printk_off_);
  if (!m.trace_clock.empty()) string_option(kOptTraceClock, m.trace_clock);
  if (!m.uname.empty()) string_option(kOptUname, m.uname);
  if (!m.version.empty()) string_option(kOptVersion, m.version);
  for (const auto& st : cpu_stats) string_option(kOptCpuStat, st);
  for (const auto& [id, data] : m.extra_options) option(id, data);
  offset_option(kOptCmdlines, cmdlines_off_);
  {
    std::string d;
    Put32(d, m.cpu_count);
    option(kOptCpuCount, d);
  }
  // DONE carries the next options section's offset, known once this one's size is.
  const uint64_t done_bytes = 2 + 4 + 8;
  const uint64_t options1_size = opts.size() + done_bytes;
  const uint64_t flyrecord_off = options1_off + kSectionHeaderBytes + options1_size;

  // The flyrecord section: per-CPU data page aligned (trace-cmd maps pages by offset).
  std::vector<uint64_t> cpu_off(m.cpu_count), cpu_size(m.cpu_count);
  uint64_t pos = flyrecord_off + kSectionHeaderBytes;
  for (uint32_t cpu = 0; cpu < m.cpu_count; ++cpu) {
    pos = (pos + m.page_size - 1) / m.page_size * m.page_size;
    cpu_off[cpu] = pos;
    // The recorded size leaves out the 4-byte chunk count (as trace-cmd 3.1.6 writes it).
    cpu_size[cpu] = spools_[cpu]->bytes;
    pos += 4 + spools_[cpu]->bytes;
  }
  const uint64_t options2_off = pos;
  {
    std::string d;
    Put64(d, options2_off);
    option(kOptDone, d);
  }
  std::string sec;
  Put16(sec, kOptDone);  // an options section has section id 0
  Put16(sec, 0);
  Put32(sec, StringId("options"));
  Put64(sec, opts.size());
  sec += opts;
  if (Status s = WriteAll(sec); !s) return s;

  sec.clear();
  Put16(sec, kOptBuffer);
  Put16(sec, kSectionFlagCompressed);
  Put32(sec, StringId("flyrecord"));
  Put64(sec, options2_off - flyrecord_off - kSectionHeaderBytes);
  if (Status s = WriteAll(sec); !s) return s;
  std::vector<char> copy(1 << 20);
  for (uint32_t cpu = 0; cpu < m.cpu_count; ++cpu) {
    if (Status s = WriteAll(std::string(cpu_off[cpu] - offset_, '\0')); !s) return s;
    std::string count;
    Put32(count, spools_[cpu]->chunks);
    if (Status s = WriteAll(count); !s) return s;
    int sfd = spools_[cpu]->fd;
    if (::lseek(sfd, 0, SEEK_SET) < 0) return IoError("cannot rewind spool of", path_);
    for (uint64_t left = spools_[cpu]->bytes; left > 0;) {
      ssize_t r = ::read(sfd, copy.data(), std::min<uint64_t>(left, copy.size()));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) return IoError("cannot read back spool of", path_);
      if (!WriteFd(fd_, copy.data(), static_cast<size_t>(r))) return IoError("cannot write", path_);
      offset_ += static_cast<uint64_t>(r);
      left -= static_cast<uint64_t>(r);
    }
  }

  // Options section 2: the BUFFER option describing the flyrecord data, then the end.
  opts.clear();
  {
    std::string d;
    Put64(d, flyrecord_off);
    PutStr(d, m.instance_name);
    PutStr(d, m.clock);
    Put32(d, m.page_size);  // trace-cmd 3.1.6 stores the page size here (not in the v7.5 text)
    Put32(d, m.cpu_count);
    for (uint32_t cpu = 0; cpu < m.cpu_count; ++cpu) {
      Put32(d, cpu);
      Put64(d, cpu_off[cpu]);
      Put64(d, cpu_size[cpu]);
    }
    option(kOptBuffer, d);
    std::string z;
    Put64(z, 0);
    option(kOptDone, z);
  }
  sec.clear();
  Put16(sec, kOptDone);
  Put16(sec, 0);
  Put32(sec, StringId("options"));
  Put64(sec, opts.size());
  sec += opts;
  if (Status s = WriteAll(sec); !s) return s;

  // The strings section last: readers scan sections after the options for it.
  uint32_t desc = StringId("strings");
  std::string block =
      CompressBlock(reinterpret_cast<const uint8_t*>(strings_.data()), strings_.size(), m.zstd_level);
  sec.clear();
  Put16(sec, kOptStrings);
  Put16(sec, kSectionFlagCompressed);
  Put32(sec, desc);
  Put64(sec, block.size());
  sec += block;
  if (Status s = WriteAll(sec); !s) return s;

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

}  // namespace exitscope
