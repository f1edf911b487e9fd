#include "base/json_schema.h"
#include "kvmbench/bench_results.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <fmt/format.h>

namespace exitscope::kvmbench {

bool IsBenchJson(const nlohmann::json& j) {
  std::string schema = j.value("schema", "");
  return schema == SchemaName("bench", kBenchJsonSchemaVersion) || schema == kBenchJsonSchemaOld;
}

Result<nlohmann::json> ReadBenchJson(const std::string& path, std::string_view tag, std::string_view what,
                                     std::string_view example) {
  std::ifstream in(path);
  if (!in) {
    return MakeError(kExitNoInput, std::string(tag) + "-open",
                     fmt::format("cannot open {} {}: {}", what, path, std::strerror(errno)),
                     fmt::format("write it first with `exitscope bench --json > {}`", example));
  }
  nlohmann::json j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object() || !IsBenchJson(j) || !j.contains("tests") || !j["tests"].is_array()) {
    return MakeError(kExitDataErr, std::string(tag) + "-format",
                     fmt::format("{} is not `exitscope bench --json` output (schema {})", path,
                                 SchemaName("bench", kBenchJsonSchemaVersion)),
                     fmt::format("write it with `exitscope bench --json > {}`", example));
  }
  return j;
}

Result<Baseline> LoadBaseline(const std::string& path) {
  auto read = ReadBenchJson(path, "bench.baseline", "baseline", "baseline.json");
  if (!read) return read.error();
  const nlohmann::json& j = read.value();
  Baseline out;
  for (const auto& t : j["tests"]) {
    if (t.is_object() && t.value("status", "") == "ok" && t.contains("cycles_per_iter") &&
        t["cycles_per_iter"].is_number()) {
      out[t.value("name", "")] = t["cycles_per_iter"].get<double>();
    }
  }
  return out;
}

}  // namespace exitscope::kvmbench
