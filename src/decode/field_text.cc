#include "decode/field_text.h"

#include <fmt/format.h>

#include "base/byte_reader.h"

namespace exitscope {
namespace {

bool IsCharType(const FieldFormat& f) {
  return f.type.starts_with("char") || f.type.starts_with("const char") || f.type.find(" char[") != std::string::npos ||
         f.type.find(" char ") != std::string::npos;
}

// The bytes an array or __data_loc field covers (empty when out of bounds).
std::span<const uint8_t> FieldBytes(const FieldFormat& f, std::span<const uint8_t> payload) {
  if (f.is_data_loc) {
    uint64_t loc = ReadUnsigned(&f, payload);
    // __data_loc: u32 with offset in the low 16 bits and length in the high 16 (kernel trace_events.h).
    uint32_t off = static_cast<uint32_t>(loc & 0xffff), len = static_cast<uint32_t>((loc >> 16) & 0xffff);
    if (f.size == 4 && off + static_cast<uint64_t>(len) <= payload.size()) return payload.subspan(off, len);
    return {};
  }
  if (f.offset + static_cast<uint64_t>(f.size) > payload.size()) return {};
  return payload.subspan(f.offset, f.size);
}

bool IsScalar(const FieldFormat& f) {
  return !f.is_data_loc && f.array_len == 0 && (f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8) &&
         f.type.find('[') == std::string::npos;
}

std::string StringValue(std::span<const uint8_t> b) {
  size_t n = 0;
  while (n < b.size() && b[n]) ++n;
  return std::string(reinterpret_cast<const char*>(b.data()), n);
}

// "0f,a2,…". By table, not one fmt call per byte: an array field can span a whole 4 KiB record, and
// the format fuzzer spent ~65 % of its time here on such inputs.
std::string HexBytes(std::span<const uint8_t> b) {
  static constexpr char kHexDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(b.size() * 3);
  for (size_t i = 0; i < b.size(); ++i) {
    if (i) s.push_back(',');
    s.push_back(kHexDigits[b[i] >> 4]);
    s.push_back(kHexDigits[b[i] & 0xf]);
  }
  return s;
}

}  // namespace

void AppendFieldsText(const EventFormat& format, std::span<const uint8_t> payload, std::string* out) {
  for (const FieldFormat& f : format.fields) {
    out->push_back(' ');
    out->append(f.name);
    out->push_back('=');
    if (IsScalar(f)) {
      if (f.is_signed)
        fmt::format_to(std::back_inserter(*out), "{}", ReadSigned(&f, payload));
      else if (f.size == 8)
        fmt::format_to(std::back_inserter(*out), "{:#x}", ReadUnsigned(&f, payload));
      else
        fmt::format_to(std::back_inserter(*out), "{}", ReadUnsigned(&f, payload));
    } else if (IsCharType(f)) {
      out->append(StringValue(FieldBytes(f, payload)));
    } else {
      out->push_back('{');
      out->append(HexBytes(FieldBytes(f, payload)));
      out->push_back('}');
    }
  }
}

void AppendFieldsJson(const EventFormat& format, std::span<const uint8_t> payload, nlohmann::json* out) {
  for (const FieldFormat& f : format.fields) {
    if (IsScalar(f)) {
      if (f.is_signed)
        (*out)[f.name] = ReadSigned(&f, payload);
      else
        (*out)[f.name] = ReadUnsigned(&f, payload);
    } else if (IsCharType(f)) {
      (*out)[f.name] = StringValue(FieldBytes(f, payload));
    } else {
      auto bytes = FieldBytes(f, payload);
      (*out)[f.name] = std::vector<uint8_t>(bytes.begin(), bytes.end());
    }
  }
}

}  // namespace exitscope
