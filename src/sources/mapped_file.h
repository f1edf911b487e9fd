// A read-only mmap of an input file: readers slice it instead of copying (trace.dat pages are
// used in place), or a view of a buffer. In: a path. Out: the bytes, or an Error (66 missing, 77 permission, 74 I/O).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "model/result.h"

namespace exitscope {

class MappedFile {
 public:
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path);
  // A view of bytes already in memory (fuzzers, tests): not owned, must outlive the MappedFile.
  static std::unique_ptr<MappedFile> View(std::span<const uint8_t> bytes);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  // Tells the kernel the pages behind [offset, offset+size) will not be read again, so a long
  // sequential read keeps a flat resident set.
  void Release(uint64_t offset, uint64_t size) const;

 private:
  MappedFile() = default;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
};

}  // namespace exitscope
