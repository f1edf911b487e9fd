#include "decode/field_text.h"

#include "base/append_number.h"
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

// A char array or string up to its first NUL.
void AppendString(std::span<const uint8_t> b, std::string* out) {
  size_t n = 0;
  while (n < b.size() && b[n]) ++n;
  out->append(reinterpret_cast<const char*>(b.data()), n);
}

std::string StringValue(std::span<const uint8_t> b) {
  std::string s;
  AppendString(b, &s);
  return s;
}

// "{0f,a2,…}". By table, not one fmt call per byte: an array field can span a whole 4 KiB record,
// and the format fuzzer spent ~65 % of its time here on such inputs.
void AppendHexBytes(std::span<const uint8_t> b, std::string* out) {
  static constexpr char kHexDigits[] = "0123456789abcdef";
  out->reserve(out->size() + b.size() * 3 + 2);
  out->push_back('{');
  for (size_t i = 0; i < b.size(); ++i) {
    if (i) out->push_back(',');
    out->push_back(kHexDigits[b[i] >> 4]);
    out->push_back(kHexDigits[b[i] & 0xf]);
  }
  out->push_back('}');
}

}  // namespace

FieldTextPlan::FieldTextPlan(const EventFormat& format) {
  fields_.reserve(format.fields.size());
  for (const FieldFormat& f : format.fields) {
    Kind kind = Kind::kBytes;
    if (IsScalar(f))
      kind = f.is_signed ? Kind::kSigned : f.size == 8 ? Kind::kHex : Kind::kUnsigned;
    else if (IsCharType(f))
      kind = Kind::kString;
    fields_.push_back({&f, kind, " " + f.name + "="});
  }
}

void FieldTextPlan::Append(std::span<const uint8_t> payload, std::string* out) const {
  for (const Field& field : fields_) {
    out->append(field.prefix);
    switch (field.kind) {
      case Kind::kSigned: AppendSigned(out, ReadSigned(field.format, payload)); break;
      case Kind::kUnsigned: AppendDecimal(out, ReadUnsigned(field.format, payload)); break;
      case Kind::kHex: AppendHex(out, ReadUnsigned(field.format, payload)); break;
      case Kind::kString: AppendString(FieldBytes(*field.format, payload), out); break;
      case Kind::kBytes: AppendHexBytes(FieldBytes(*field.format, payload), out); break;
    }
  }
}

void AppendFieldsText(const EventFormat& format, std::span<const uint8_t> payload, std::string* out) {
  FieldTextPlan(format).Append(payload, out);
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
