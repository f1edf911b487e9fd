#include "sources/tracedat/decompressor.h"

#include <zlib.h>
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
}

Decompressor::~Decompressor() {
  if (zstd_ctx_) ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(zstd_ctx_));
}

bool Decompressor::Decompress(std::span<const uint8_t> in, std::span<uint8_t> out) {
  switch (codec_) {
    case Codec::kNone:
      if (in.size() != out.size()) return false;
      if (!in.empty()) std::memcpy(out.data(), in.data(), in.size());
      return true;
    case Codec::kZlib: {
      uLongf out_len = out.size();
      int rc = uncompress(out.data(), &out_len, in.data(), in.size());
      return rc == Z_OK && out_len == out.size();
    }
    case Codec::kZstd: {
      size_t n = ZSTD_decompressDCtx(static_cast<ZSTD_DCtx*>(zstd_ctx_), out.data(), out.size(), in.data(), in.size());
      return !ZSTD_isError(n) && n == out.size();
    }
    case Codec::kUnknown: return false;
  }
  return false;
}

}  // namespace exitscope
