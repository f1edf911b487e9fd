#include "sources/text/text_line_reader.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace exitscope {

namespace {
constexpr size_t kChunkBytes = 1 << 20;
constexpr int kGzipWindowBits = 15 + 32;  // zlib: 15-bit window, +32 = detect gzip/zlib header
}  // namespace

bool LooksGzip(const uint8_t* data, size_t size) { return size >= 2 && data[0] == 0x1f && data[1] == 0x8b; }

Result<std::unique_ptr<TextLineReader>> TextLineReader::Open(const std::string& path) {
  auto in = MappedFile::Open(path);
  if (!in) return in.error();
  return Open(std::move(in.value()));
}

Result<std::unique_ptr<TextLineReader>> TextLineReader::Open(std::unique_ptr<MappedFile> input) {
  const std::string path = input->path();
  std::unique_ptr<TextLineReader> r(new TextLineReader());
  r->input_ = std::move(input);
  r->stream_ = r->input_->stream_fd() >= 0;
  auto bytes = r->input_->bytes();
  r->gzip_ = LooksGzip(bytes.data(), bytes.size());
  if (r->gzip_) {
    if (inflateInit2(&r->zs_, kGzipWindowBits) != Z_OK) {
      return MakeError(kExitSoftware, "text.zlib", "zlib could not start inflating '" + path + "'");
    }
    r->zs_init_ = true;
  }
  // A plain input smaller than a chunk needs no more than its size and one byte (so its one line,
  // without a newline, still reads as cut, not as over-long): a fuzz input of a few KB allocated a
  // MiB per run, and fuzzed 2.8x slower under ASan.
  r->buf_size_ = kChunkBytes;
  if (!r->stream_ && !r->gzip_) r->buf_size_ = std::min<size_t>(kChunkBytes, bytes.size() + 1);
  r->buf_.reset(new char[r->buf_size_]);  // default-initialized: pages are touched as filled
  return r;
}

TextLineReader::~TextLineReader() {
  if (zs_init_) inflateEnd(&zs_);
}

std::span<const uint8_t> TextLineReader::NextRaw() {
  auto bytes = input_->bytes();
  if (!stream_) {  // a compressed file: its next chunk, read
    size_t n = std::min<size_t>(bytes.size() - raw_pos_, kChunkBytes);
    if (n == 0) return {};
    if (!raw_buf_) raw_buf_.reset(new uint8_t[kChunkBytes]);
    input_->ReadAt(raw_pos_, n, raw_buf_.get());
    raw_pos_ += n;
    raw_done_ += n;
    return {raw_buf_.get(), n};
  }
  if (raw_pos_ < bytes.size()) {
    // A stream's look-ahead, in place; zlib counts input in 32 bits: at most 1 GiB a piece.
    size_t n = std::min<size_t>(bytes.size() - raw_pos_, size_t{1} << 30);
    auto piece = bytes.subspan(raw_pos_, n);
    raw_pos_ += n;
    raw_done_ += n;
    return piece;
  }
  if (raw_end_) return {};
  if (!raw_buf_) raw_buf_.reset(new uint8_t[kChunkBytes]);
  for (;;) {
    ssize_t n = ::read(input_->stream_fd(), raw_buf_.get(), kChunkBytes);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      // A read error ends the stream like a cut: what was read is kept, the cut is flagged.
      if (n < 0) truncated_ = true;
      raw_end_ = true;
      return {};
    }
    raw_done_ += static_cast<uint64_t>(n);
    return {raw_buf_.get(), static_cast<size_t>(n)};
  }
}

bool TextLineReader::Fill() {
  // Keep the partial line at the front, fill after it.
  size_t keep = buf_end_ - buf_begin_;
  if (keep == buf_size_) {
    // A line longer than the chunk: hand out what we have (the caller counts it as garbage).
    return false;
  }
  std::memmove(buf_.get(), buf_.get() + buf_begin_, keep);
  buf_begin_ = 0;
  buf_end_ = keep;
  if (gzip_)
    FillGzip();
  else
    FillPlain();
  return buf_end_ > keep;
}

bool TextLineReader::FillPlain() {
  if (!stream_) {  // a file: straight into the line buffer
    const size_t n = std::min<size_t>(input_->bytes().size() - raw_pos_, buf_size_ - buf_end_);
    if (n == 0) return false;
    input_->ReadAt(raw_pos_, n, reinterpret_cast<uint8_t*>(buf_.get() + buf_end_));
    raw_pos_ += n;
    raw_done_ += n;
    buf_end_ += n;
    return true;
  }
  while (buf_end_ < buf_size_) {
    if (pending_.empty()) pending_ = NextRaw();
    if (pending_.empty()) return false;
    size_t n = std::min(pending_.size(), buf_size_ - buf_end_);
    std::memcpy(buf_.get() + buf_end_, pending_.data(), n);
    buf_end_ += n;
    pending_ = pending_.subspan(n);
  }
  return true;
}

bool TextLineReader::FillGzip() {
  if (zs_done_) return false;
  while (buf_end_ < buf_size_) {
    if (zs_.avail_in == 0) {
      auto raw = NextRaw();
      if (raw.empty()) {
        truncated_ = true;  // input ended before the gzip trailer
        zs_done_ = true;
        break;
      }
      zs_.next_in = const_cast<Bytef*>(raw.data());
      zs_.avail_in = static_cast<uInt>(raw.size());
    }
    zs_.next_out = reinterpret_cast<Bytef*>(buf_.get() + buf_end_);
    zs_.avail_out = static_cast<uInt>(buf_size_ - buf_end_);
    int rc = inflate(&zs_, Z_NO_FLUSH);
    buf_end_ = buf_size_ - zs_.avail_out;
    if (rc == Z_STREAM_END) {
      // Concatenated gzip members (gzip a >> b) are legal: continue with the next one.
      if (zs_.avail_in == 0) {
        auto raw = NextRaw();
        zs_.next_in = const_cast<Bytef*>(raw.data());
        zs_.avail_in = static_cast<uInt>(raw.size());
      }
      if (LooksGzip(zs_.next_in, zs_.avail_in)) {
        uLong in_done = zs_.total_in;
        Bytef* next = zs_.next_in;
        uInt avail = zs_.avail_in;
        inflateReset(&zs_);
        zs_.total_in = in_done;
        zs_.next_in = next;
        zs_.avail_in = avail;
        continue;
      }
      zs_done_ = true;
      break;
    }
    if (rc != Z_OK) {
      truncated_ = true;  // Z_DATA_ERROR / Z_BUF_ERROR: damaged or cut-off stream
      zs_done_ = true;
      break;
    }
  }
  return true;
}

bool TextLineReader::NextLine(std::string_view* line) {
  for (;;) {
    const char* start = buf_.get() + buf_begin_;
    size_t left = buf_end_ - buf_begin_;
    if (const void* nl = std::memchr(start, '\n', left)) {
      size_t len = static_cast<const char*>(nl) - start;
      buf_begin_ += len + 1;
      *line = std::string_view(start, len);
      return true;
    }
    if (!Fill()) {
      if (buf_end_ == buf_begin_) return false;
      // Last line without a newline, or an over-long line: hand it out whole.
      unterminated_ = buf_end_ - buf_begin_ < buf_size_;
      *line = std::string_view(buf_.get() + buf_begin_, buf_end_ - buf_begin_);
      buf_begin_ = buf_end_;
      return true;
    }
  }
}

}  // namespace exitscope
