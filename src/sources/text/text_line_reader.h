// Lines of a text trace, plain or gzip-compressed (detected by the 1f 8b magic, not the name).
// In: a path. Out: one line at a time as a string_view without the newline, valid until the next
// call. Plain files are mapped and lines point into the map; gzip is inflated in 1 MiB chunks with
// zlib. Assumption: lines are short (a line longer than the chunk is cut and counted by the caller
// as unparseable); a truncated gzip stream yields what it holds and sets truncated().
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "sources/mapped_file.h"

namespace exitscope {

class TextLineReader {
 public:
  static Result<std::unique_ptr<TextLineReader>> Open(const std::string& path);
  // The same over an already opened input (MappedFile::View for fuzzers and tests).
  static Result<std::unique_ptr<TextLineReader>> Open(std::unique_ptr<MappedFile> input);
  ~TextLineReader();

  bool NextLine(std::string_view* line);
  bool gzip() const { return gzip_; }
  bool truncated() const { return truncated_; }   // gzip stream ended early or was damaged
  uint64_t bytes_done() const { return gzip_ ? zs_.total_in : pos_; }
  uint64_t bytes_total() const { return input_->bytes().size(); }

 private:
  TextLineReader() = default;
  bool FillGzip();  // inflates more into buf_; false when the stream has nothing more

  std::unique_ptr<MappedFile> input_;
  bool gzip_ = false;
  bool truncated_ = false;
  size_t pos_ = 0;                // plain: offset of the next line in the map
  z_stream zs_{};
  bool zs_init_ = false, zs_done_ = false;
  // gzip: inflated bytes. Not a vector: resize() would zero the whole MiB for every input, and
  // the text fuzzer spent a quarter of its time there on inputs that inflate to a few KB.
  std::unique_ptr<char[]> buf_;
  size_t buf_size_ = 0;
  size_t buf_begin_ = 0, buf_end_ = 0;
};

// True when the bytes start with the gzip magic (RFC 1952: 1f 8b).
bool LooksGzip(const uint8_t* data, size_t size);

}  // namespace exitscope
