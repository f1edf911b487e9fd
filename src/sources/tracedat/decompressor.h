// The codecs trace-cmd v7 writes ("zlib" via compress2, "zstd" via ZSTD_compress), behind one call.
// zlib blocks are inflated by libdeflate (whole-buffer, the size known up front; the same checks as
// zlib's uncompress at 2-3x its speed), zstd by libzstd.
// In: a compressed block and the uncompressed size the file claims. Out: the bytes, or false when
// the block is corrupt or does not decompress to exactly that size.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

namespace exitscope {

enum class Codec { kNone, kZlib, kZstd, kUnknown };

Codec CodecFromName(std::string_view name);

// A block's claimed uncompressed size is believed only up to 256 MiB and 32768× its compressed size
// (zstd's best case, an RLE block, is about that): a damaged size field must not make the reader
// allocate gigabytes before the decompressor can say the block is bad.
inline constexpr uint64_t kMaxUncompressedBytes = 1ull << 28;
inline constexpr uint64_t kMaxCompressionRatio = 1ull << 15;
inline bool PlausibleUncompressedSize(uint64_t compressed, uint64_t uncompressed) {
  return uncompressed <= kMaxUncompressedBytes && uncompressed <= (compressed + 64) * kMaxCompressionRatio;
}

class Decompressor {
 public:
  explicit Decompressor(Codec codec);
  ~Decompressor();
  Codec codec() const { return codec_; }
  bool Decompress(std::span<const uint8_t> in, std::span<uint8_t> out);

 private:
  Codec codec_;
  void* zstd_ctx_ = nullptr;     // ZSTD_DCtx*, reused across chunks
  void* deflate_ctx_ = nullptr;  // libdeflate_decompressor* (zlib), reused across chunks
};

}  // namespace exitscope
