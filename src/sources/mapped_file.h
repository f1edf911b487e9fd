// A whole input file as one read-only byte span, shared by every file reader (trace.dat, perf.data,
// text): mmap for regular files (the page cache does the I/O; trace.dat pages are used in place), a
// plain read into memory for pipes and FIFOs (`report <(zcat trace.txt.gz)`) or when mmap fails.
// In: a path, or "-" for stdin. Out: bytes valid for the object's lifetime, or an Error (66 missing / not a file,
// 77 permission, 74 I/O). Assumption: inputs fit the address space (64-bit hosts).
#pragma once

#include <cstdint>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace exitscope {

// The path that names stdin (`cat trace.txt | exitscope report -`).
inline constexpr std::string_view kStdinPath = "-";

// The error for an input that open(2) refused with `err` (also used by input detection).
Error InputOpenError(const std::string& path, int err);

class MappedFile {
 public:
  // A pipe, FIFO or stdin is read up to `lookahead` bytes (all of it by default); the rest stays
  // unread in stream_fd() for a reader that streams (text) or for ReadRest (formats that seek).
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path, size_t lookahead = SIZE_MAX);
  // A view of bytes already in memory (fuzzers, tests): not owned, must outlive the MappedFile;
  // `name` is what messages call it.
  static std::unique_ptr<MappedFile> View(std::span<const uint8_t> bytes, const std::string& name);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }
  // True when the bytes are the page cache's (a regular file); false when they were read into
  // memory (pipe, FIFO, stdin, a view): such an input cannot be opened a second time.
  bool mapped() const { return mapped_; }
  // Tells the kernel the pages behind [offset, offset+size) will not be read again, so a long
  // sequential read keeps a flat resident set (no-op when the input was read, not mapped).
  void Release(uint64_t offset, uint64_t size) const;
  // Maps in the pages of [offset, offset+size) in one call (MADV_POPULATE_READ, Linux 5.14; a no-op
  // before, or when the input was read): a walk then takes no page fault per 64 KB of fault-around.
  // In a VM every fault is a guest exception of its own: ~6.5 µs each on the 2-core VM here, a
  // tenth of a second per pass over a 1 GB perf.data. Walkers map kPrefaultBytes ahead of them.
  void Prefault(uint64_t offset, uint64_t size) const;
  static constexpr uint64_t kPrefaultBytes = 2 << 20;
  // Copies bytes()[offset, offset + size) into `out`: pread(2) from a mapped file, so a walk that
  // decodes and moves on maps no page of it at all (a memcpy from bytes() otherwise, or after a
  // failed read). In a VM that shadows page tables, mapping a page costs far more than copying it:
  // on the 2-core VM here one core pread a 1 GB perf.data from the page cache in 0.12 s, while
  // mapping and touching it took 0.35 s on two (bench_floor read / touch).
  void ReadAt(uint64_t offset, size_t size, uint8_t* out) const;
  // The descriptor the input's unread rest comes from; -1 when bytes() is the whole input.
  int stream_fd() const { return fd_; }
  // Reads the unread rest into bytes() (74 on a read error); no-op when there is none.
  Status ReadRest();

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::vector<uint8_t> owned_;  // pipes and inputs that could not be mapped
  int fd_ = -1;                 // open while the input has an unread rest
  int read_fd_ = -1;            // a mapped file's descriptor, for ReadAt
  Status ReadUpTo(size_t limit);
};

}  // namespace exitscope
