// Renders any event's fields by name from its format, for `dump` (text and JSON). In: a format and
// a payload. Out: "name=value" text. Integers: signed decimal; unsigned decimal, 8-byte ones in hex
// (addresses, u64 registers); char arrays and __data_loc strings as text; other arrays as hex bytes.
#pragma once

#include <span>
#include <string>

#include <nlohmann/json.hpp>

#include "format/event_format.h"

namespace exitscope {

// Appends " name=value" for every non-common field.
void AppendFieldsText(const EventFormat& format, std::span<const uint8_t> payload, std::string* out);
// Every non-common field as a JSON member (numbers stay numbers).
void AppendFieldsJson(const EventFormat& format, std::span<const uint8_t> payload, nlohmann::json* out);

}  // namespace exitscope
