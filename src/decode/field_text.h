// Renders any event's fields by name from its format, for `dump` (text and JSON). In: a format and
// a payload. Out: "name=value" text. Integers: signed decimal; unsigned decimal, 8-byte ones in hex
// (addresses, u64 registers); char arrays and __data_loc strings as text; other arrays as hex bytes.
#pragma once

#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "format/event_format.h"

namespace exitscope {

// How each non-common field of one format prints, worked out once: the field's type text is read
// here, not per record (a dump prints millions of records of a few formats). Holds pointers into
// `format`, which must outlive it.
class FieldTextPlan {
 public:
  explicit FieldTextPlan(const EventFormat& format);
  // Appends " name=value" for every non-common field.
  void Append(std::span<const uint8_t> payload, std::string* out) const;
  // Appends {"name":value,…} for every non-common field: the text AppendFieldsJson's object dumps
  // to (members in name order, a repeated name once with its last field's value).
  void AppendJson(std::span<const uint8_t> payload, std::string* out) const;

 private:
  enum class Kind : uint8_t { kSigned, kUnsigned, kHex, kString, kBytes };
  struct Field {
    const FieldFormat* format;
    Kind kind;
    std::string prefix;    // " name="
    std::string json_key;  // "\"name\":"
  };
  std::vector<Field> fields_;
  std::vector<size_t> json_order_;  // fields_ in JSON member order
};

// Appends " name=value" for every non-common field (FieldTextPlan for one record).
void AppendFieldsText(const EventFormat& format, std::span<const uint8_t> payload, std::string* out);
// Every non-common field as a JSON member (numbers stay numbers): the reference
// FieldTextPlan::AppendJson is held to (field_text_test, the event-format fuzz target).
void AppendFieldsJson(const EventFormat& format, std::span<const uint8_t> payload, nlohmann::json* out);

}  // namespace exitscope
