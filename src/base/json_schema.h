// One way every JSON output says what it is (issue 13): "schema": "exitscope.<command>/<version>"
// and "schema_version": <version>, both at the top of the object (google/benchmark's context idea).
// Bump a command's version when a field changes meaning or goes away; additions keep it.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace exitscope {

inline std::string SchemaName(std::string_view command, int version) {
  return "exitscope." + std::string(command) + "/" + std::to_string(version);
}

template <typename Json>  // nlohmann::json or ordered_json
inline void TagSchema(Json* j, std::string_view command, int version) {
  (*j)["schema"] = SchemaName(command, version);
  (*j)["schema_version"] = version;
}

}  // namespace exitscope
