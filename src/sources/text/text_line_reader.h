// Lines of a text trace, plain or gzip-compressed (detected by the 1f 8b magic, not the name).
// In: a path. Out: one line at a time as a string_view without the newline, valid until the next
// call. A file is read in 1 MiB chunks into the line buffer (a regular file with pread, so no page
// of it is mapped in: memory stays flat and no page fault is taken; bytes already in memory, a
// view, copied: MappedFile::ReadAt); gzip is inflated in 1 MiB chunks with zlib; a pipe or FIFO
// (MappedFile with a stream_fd) is streamed: its look-ahead, then reads of 1 MiB, so memory stays
// flat whatever flows through. Assumption: lines are short (a line longer than the chunk is cut
// and counted by the caller as unparseable); a truncated gzip stream yields what it holds and sets
// truncated().
#pragma once

#include <zlib.h>

#include <cstdint>
#include <memory>
#include <span>
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
  bool truncated() const { return truncated_; }  // gzip stream ended early or was damaged
  // The line NextLine gave last ended at the input's end without a newline (a cut file).
  bool unterminated() const { return unterminated_; }
  uint64_t bytes_done() const { return gzip_ ? zs_.total_in : raw_done_; }
  // 0 for a stream: its size is not known before its end.
  uint64_t bytes_total() const { return stream_ ? 0 : input_->bytes().size(); }

 private:
  TextLineReader() = default;
  bool Fill();  // inflates or reads more into buf_; false when the input has nothing more
  bool FillGzip();
  bool FillPlain();  // a plain stream
  // The next raw (maybe compressed) bytes: the input's bytes(), then what its stream_fd gives;
  // empty at the end. Valid until the next call.
  std::span<const uint8_t> NextRaw();

  std::unique_ptr<MappedFile> input_;
  bool gzip_ = false;
  bool stream_ = false;                 // the input has an unread rest in stream_fd(); else read with
                                        // ReadAt, in chunks
  size_t raw_pos_ = 0;                  // bytes() handed out by NextRaw
  uint64_t raw_done_ = 0;               // every raw byte handed out
  std::unique_ptr<uint8_t[]> raw_buf_;  // a stream's reads after its look-ahead, a gzip file's chunks
  bool raw_end_ = false;
  std::span<const uint8_t> pending_;  // plain stream: raw bytes not yet copied into buf_
  bool truncated_ = false;
  bool unterminated_ = false;
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
