// The codecs trace-cmd v7 writes ("zlib" via compress2, "zstd" via ZSTD_compress), behind one call.
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

class Decompressor {
 public:
  explicit Decompressor(Codec codec);
  ~Decompressor();
  Codec codec() const { return codec_; }
  bool Decompress(std::span<const uint8_t> in, std::span<uint8_t> out);

 private:
  Codec codec_;
  void* zstd_ctx_ = nullptr;  // ZSTD_DCtx*, reused across chunks
};

}  // namespace exitscope
