// JSON text appended to a string without building a json value, for outputs of a line or an
// event per record (`dump --json`, `timeline`): nlohmann's object per line (a sorted map, an
// allocation per member) took ~2 µs a record. In: text. Out: the same bytes nlohmann's
// dump(-1, ' ', false, error_handler_t::replace) writes for it.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace exitscope {

// Printable ASCII other than '"' and '\\': what JSON writes as it is.
inline bool IsPlainJsonText(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
}

// "text", quoted; escapes, control characters and invalid UTF-8 (replaced) as nlohmann writes them.
inline void AppendJsonString(std::string* out, std::string_view s) {
  if (IsPlainJsonText(s)) {
    out->push_back('"');
    out->append(s);
    out->push_back('"');
    return;
  }
  *out += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace exitscope
