// Renders `exitscope bench` results: a text table, JSON (schema "exitscope.bench/1"), and a comparison
// with a baseline JSON from an earlier run (read by kvmbench/bench_results.h).
// In: a BenchReport. Out: text or nlohmann::json. Assumption: tests are matched by name.
#pragma once

#include <cstdio>

#include <nlohmann/json.hpp>

#include "kvmbench/bench_results.h"
#include "kvmbench/bench_runner.h"

namespace exitscope::kvmbench {

void PrintTable(const BenchReport& report, const Baseline* baseline, FILE* out);
nlohmann::json ToJson(const BenchReport& report, const Baseline* baseline);
void PrintTestList(FILE* out);

}  // namespace exitscope::kvmbench
