// Bounds-checked little-endian cursor over a byte span: every binary reader (trace.dat headers,
// options, ring-buffer pages) goes through it so malformed input can never read out of bounds.
// In: a span. Out: values, or ok() == false once any read ran past the end (sticky).
// Assumption: the traced machine was little endian (x86, the only KVM host this tool targets).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace exitscope {

// A u16 / u32 / u64 at `p`, any alignment: the hot loops' loads, where the width is known.
inline uint16_t LoadLe16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t LoadLe32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline uint64_t LoadLe64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

inline uint64_t LoadLe(const uint8_t* p, uint32_t size) {
  switch (size) {
    case 1: return p[0];
    case 2: return LoadLe16(p);
    case 4: return LoadLe32(p);
    case 8: return LoadLe64(p);
    default: return 0;
  }
}

class ByteReader {
 public:
  explicit ByteReader(std::span<const uint8_t> bytes) : bytes_(bytes) {}

  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  size_t remaining() const { return ok_ ? bytes_.size() - pos_ : 0; }
  void Seek(size_t pos) {
    if (pos > bytes_.size())
      ok_ = false;
    else
      pos_ = pos;
  }

  uint64_t U(uint32_t size) {
    if (!Has(size)) return 0;
    uint64_t v = LoadLe(bytes_.data() + pos_, size);
    pos_ += size;
    return v;
  }
  uint16_t U16() { return static_cast<uint16_t>(U(2)); }
  uint32_t U32() { return static_cast<uint32_t>(U(4)); }
  uint64_t U64() { return U(8); }

  std::span<const uint8_t> Bytes(uint64_t n) {
    if (!Has(n)) return {};
    auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  std::string_view Text(uint64_t n) {
    auto b = Bytes(n);
    return {reinterpret_cast<const char*>(b.data()), b.size()};
  }
  // A NUL-terminated string; the terminator is consumed, not returned.
  std::string_view CString() {
    // Nothing left (also an empty span, whose data() may be null: memchr must not see that).
    if (!ok_ || pos_ >= bytes_.size()) {
      ok_ = false;
      return {};
    }
    const void* end = std::memchr(bytes_.data() + pos_, 0, bytes_.size() - pos_);
    if (!end) {
      ok_ = false;
      return {};
    }
    size_t n = static_cast<const uint8_t*>(end) - (bytes_.data() + pos_);
    std::string_view s(reinterpret_cast<const char*>(bytes_.data() + pos_), n);
    pos_ += n + 1;
    return s;
  }

 private:
  bool Has(uint64_t n) {
    if (!ok_ || n > bytes_.size() - pos_) {
      ok_ = false;
      return false;
    }
    return true;
  }
  std::span<const uint8_t> bytes_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace exitscope
