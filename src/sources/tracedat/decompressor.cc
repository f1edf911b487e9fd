#include "sources/tracedat/decompressor.h"

#include <libdeflate.h>
#include <zstd.h>

#include <cstring>

namespace exitscope {

Codec CodecFromName(std::string_view name) {
  if (name == "none" || name.empty()) return Codec::kNone;
  if (name == "zlib") return Codec::kZlib;
  if (name == "zstd") return Codec::kZstd;
  return Codec::kUnknown;
}

Decompressor::Decompressor(Codec codec) : codec_(codec) {
  if (codec_ == Codec::kZstd) zstd_ctx_ = ZSTD_createDCtx();
  if (codec_ == Codec::kZlib) deflate_ctx_ = libdeflate_alloc_decompressor();
}

Decompressor::~Decompressor() {
  if (zstd_ctx_) ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(zstd_ctx_));
  if (deflate_ctx_) libdeflate_free_decompressor(static_cast<libdeflate_decompressor*>(deflate_ctx_));
}

bool Decompressor::Decompress(std::span<const uint8_t> in, std::span<uint8_t> out) {
  switch (codec_) {
    case Codec::kNone:
      if (in.size() != out.size()) return false;
      if (!in.empty()) std::memcpy(out.data(), in.data(), in.size());
      return true;
    case Codec::kZlib:
      // What zlib's uncompress() checks (header, adler32, exactly out.size() bytes), 2-3x faster.
      return deflate_ctx_ &&
             libdeflate_zlib_decompress(static_cast<libdeflate_decompressor*>(deflate_ctx_), in.data(), in.size(),
                                        out.data(), out.size(), nullptr) == LIBDEFLATE_SUCCESS;
    case Codec::kZstd: {
      size_t n = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(zstd_ctx_), out.data(), out.size(), in.data(), in.size());
      return !ZSTD_isError(n) && n == out.size();
    }
    case Codec::kUnknown: return false;
  }
  return false;
}

}  // namespace exitscope
