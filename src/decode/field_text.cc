#include "decode/field_text.h"

#include <algorithm>

#include "base/append_number.h"
#include "base/byte_reader.h"
#include "base/json_text.h"

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
std::string_view CString(std::span<const uint8_t> b) {
  return std::string_view(reinterpret_cast<const char*>(b.data()),
                          static_cast<size_t>(std::find(b.begin(), b.end(), 0) - b.begin()));
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
    std::string key;
    AppendJsonString(&key, f.name);
    fields_.push_back({&f, kind, " " + f.name + "=", key + ":"});
  }
  // A json object's members print in key order, and a name set twice keeps its last value.
  for (size_t i = 0; i < fields_.size(); ++i) json_order_.push_back(i);
  auto name = [this](size_t i) -> const std::string& { return fields_[i].format->name; };
  std::stable_sort(json_order_.begin(), json_order_.end(), [&](size_t a, size_t b) { return name(a) < name(b); });
  std::vector<size_t> last;
  for (size_t k = 0; k < json_order_.size(); ++k) {
    if (k + 1 < json_order_.size() && name(json_order_[k + 1]) == name(json_order_[k])) continue;
    last.push_back(json_order_[k]);
  }
  json_order_ = std::move(last);
}

void FieldTextPlan::Append(std::span<const uint8_t> payload, std::string* out) const {
  for (const Field& field : fields_) {
    out->append(field.prefix);
    switch (field.kind) {
      case Kind::kSigned: AppendSigned(out, ReadSigned(field.format, payload)); break;
      case Kind::kUnsigned: AppendDecimal(out, ReadUnsigned(field.format, payload)); break;
      case Kind::kHex: AppendHex(out, ReadUnsigned(field.format, payload)); break;
      case Kind::kString: out->append(CString(FieldBytes(*field.format, payload))); break;
      case Kind::kBytes: AppendHexBytes(FieldBytes(*field.format, payload), out); break;
    }
  }
}

void FieldTextPlan::AppendJson(std::span<const uint8_t> payload, std::string* out) const {
  out->push_back('{');
  for (size_t k = 0; k < json_order_.size(); ++k) {
    const Field& field = fields_[json_order_[k]];
    if (k) out->push_back(',');
    out->append(field.json_key);
    switch (field.kind) {
      case Kind::kSigned: AppendSigned(out, ReadSigned(field.format, payload)); break;
      case Kind::kUnsigned:
      case Kind::kHex: AppendDecimal(out, ReadUnsigned(field.format, payload)); break;
      case Kind::kString: AppendJsonString(out, CString(FieldBytes(*field.format, payload))); break;
      case Kind::kBytes: {
        out->push_back('[');
        std::span<const uint8_t> b = FieldBytes(*field.format, payload);
        for (size_t i = 0; i < b.size(); ++i) {
          if (i) out->push_back(',');
          AppendDecimal(out, b[i]);
        }
        out->push_back(']');
        break;
      }
    }
  }
  out->push_back('}');
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
      (*out)[f.name] = std::string(CString(FieldBytes(f, payload)));
    } else {
      auto bytes = FieldBytes(f, payload);
      (*out)[f.name] = std::vector<uint8_t>(bytes.begin(), bytes.end());
    }
  }
}

}  // namespace exitscope
