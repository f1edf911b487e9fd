// A whole input file as one read-only byte span: mmap for regular files (the page cache does the
// I/O, nothing is copied), a plain read into memory for pipes and FIFOs. In: a path. Out: bytes that
// stay valid for the object's lifetime. Assumption: inputs fit the address space (64-bit hosts).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "model/result.h"

namespace exitscope {

class MappedInput {
 public:
  static Result<std::unique_ptr<MappedInput>> Open(const std::string& path);
  ~MappedInput();
  MappedInput(const MappedInput&) = delete;
  MappedInput& operator=(const MappedInput&) = delete;

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  const std::string& path() const { return path_; }

 private:
  MappedInput() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;
  std::vector<uint8_t> owned_;  // when the input could not be mapped
};

}  // namespace exitscope
