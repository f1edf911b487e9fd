// Writes trace-cmd's trace.dat version 7 (sections, zstd-compressed) so that a live recording can be
// read later by `exitscope report` and by Debian's `trace-cmd report` (3.1.6).
// In: the tracing metadata (header_page/header_event, event `format` texts, saved_cmdlines, uname,
// clock) at Create, then raw ring-buffer pages (as read from per_cpu/cpuN/trace_pipe_raw) in any CPU
// interleaving, then per-CPU stats at Finish. Out: one file.
// Key assumption: pages are stored byte for byte as the kernel gave them (the reader decodes them
// with the header_page layout stored beside them); per-CPU data must be contiguous in the file, so
// compressed chunks are spooled to one unlinked temporary file per CPU and copied in at Finish.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "sources/tracedat/tracedat_format.h"

namespace exitscope {

struct TraceDatSystem {
  std::string name;                  // "kvm"
  std::vector<std::string> formats;  // events/<name>/<event>/format texts
};

struct TraceDatMeta {
  uint32_t page_size = 4096;                // ring-buffer sub-buffer size in bytes
  uint32_t cpu_count = 0;                   // CPUs of the traced machine (one flyrecord stream each)
  std::string header_page;                  // events/header_page text
  std::string header_event;                 // events/header_event text
  std::vector<std::string> ftrace_formats;  // events/ftrace/*/format (may be empty)
  std::vector<TraceDatSystem> systems;
  std::string kallsyms;        // /proc/kallsyms text (optional)
  std::string printk_formats;  // printk_formats text (optional)
  std::string cmdlines;        // saved_cmdlines text: "pid comm\n" lines
  std::string uname;           // "Linux host 6.1.0-57-amd64 x86_64"
  std::string trace_clock;     // the trace_clock file text: "[local] global …"
  std::string clock;           // the clock in use: "local"
  std::string version;         // recorder version string
  std::string instance_name;   // BUFFER name; "" for the top-level buffer (as trace-cmd reads it)
  // More options written as given: {id, data} (tests: TSC2NSEC, TIME_SHIFT …; trace.dat.v7 doc).
  std::vector<std::pair<uint16_t, std::string>> extra_options;
  int zstd_level = 1;                                 // speed over ratio: the writer runs at the ring buffer's pace
  uint32_t pages_per_chunk = kTraceCmdPagesPerChunk;  // trace-cmd's own chunk size
};

class TraceDatWriter {
 public:
  ~TraceDatWriter();
  // Creates `path` and writes the metadata sections; fails with kExitCantCreat-style errors.
  static Result<std::unique_ptr<TraceDatWriter>> Create(const std::string& path, TraceDatMeta meta);
  // Appends whole pages (a multiple of page_size bytes) of one CPU's ring buffer, in read order.
  Status AddPages(uint32_t cpu, std::span<const uint8_t> pages);
  // Writes the options (with one CPUSTAT text per CPU, may be empty), the flyrecord data and the
  // string table; the file is complete and closed afterwards.
  Status Finish(const std::vector<std::string>& cpu_stats);
  // Replaces the saved command lines (written at Finish).
  void set_cmdlines(std::string cmdlines) { meta_.cmdlines = std::move(cmdlines); }
  // One more option written at Finish (record's GUEST options, known once the recording ends).
  void add_option(uint16_t id, std::string data) { meta_.extra_options.emplace_back(id, std::move(data)); }
  uint64_t pages_written() const { return pages_written_; }
  uint64_t bytes_uncompressed() const { return pages_written_ * meta_.page_size; }

 private:
  struct CpuSpool;
  TraceDatWriter() = default;
  Status FlushChunk(CpuSpool& spool);
  uint32_t StringId(const std::string& s);
  Status WriteAll(const std::string& bytes);
  Status WriteSection(uint16_t id, const std::string& description, const std::string& body);
  // Finish's steps (tracedat_writer.cc).
  struct FlyrecordLayout;
  std::string SectionHeader(uint16_t id, uint16_t flags, const std::string& description, uint64_t size);
  std::string MetadataOptions(const std::vector<std::string>& cpu_stats) const;
  FlyrecordLayout LayOutFlyrecord(uint64_t section_off) const;
  Status CopySpool(uint32_t cpu, std::vector<char>& buffer);
  Status WriteFlyrecord(const FlyrecordLayout& fly);
  std::string BufferOptions(const FlyrecordLayout& fly) const;
  Status WriteOptionsSection(const std::string& opts);
  Status WriteStringsSection();
  Status PatchFirstOptionsAndClose(uint64_t options1_off);

  TraceDatMeta meta_;
  std::string path_;
  int fd_ = -1;
  uint64_t offset_ = 0;  // where the next write lands
  std::string strings_;  // the string table: NUL-terminated, addressed by offset
  std::vector<std::unique_ptr<CpuSpool>> spools_;
  uint64_t header_info_off_ = 0, ftrace_off_ = 0, events_off_ = 0, kallsyms_off_ = 0, printk_off_ = 0,
           cmdlines_off_ = 0, options_field_off_ = 0;
  uint64_t pages_written_ = 0;
  bool finished_ = false;
};

}  // namespace exitscope
