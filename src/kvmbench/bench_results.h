// Reads `exitscope bench --json` files back: the baseline of `bench --baseline` and the costs of
// `advise --bench`. In: a path. Out: the JSON document, or name -> cycles/iter of the tests that ran.
// Assumption: the files are ones report/bench_reporter.h wrote (schema "exitscope.bench/1", or the
// older "exitscope-bench/1" of the same layout); tests are matched by name.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/result.h"

namespace exitscope::kvmbench {

// "exitscope.bench/1" (base/json_schema.h); files written before it say "exitscope-bench/1", the same
// layout, and are read too.
inline constexpr int kBenchJsonSchemaVersion = 1;
inline constexpr const char* kBenchJsonSchemaOld = "exitscope-bench/1";
bool IsBenchJson(const nlohmann::json& j);
// Reads a `bench --json` file; errors are tagged "<tag>-open" (66) / "<tag>-format" (65) and name it as
// `what`, with `bench --json > <example>` as the hint.
Result<nlohmann::json> ReadBenchJson(const std::string& path, std::string_view tag, std::string_view what,
                                     std::string_view example);

// name -> cycles/iter of the tests that ran in the baseline.
using Baseline = std::map<std::string, double>;

Result<Baseline> LoadBaseline(const std::string& path);

}  // namespace exitscope::kvmbench
