// Renders one interval of `exitscope top` (analysis/top_aggregator.h): a plain text table, or one
// JSON object per line (schema "exitscope.top/1", with "tool" and "tool_version" as every output).
#pragma once

#include <string>

#include "analysis/top_aggregator.h"

namespace exitscope {

inline constexpr int kTopSchemaVersion = 1;

std::string RenderTopText(const TopInterval& t);
std::string RenderTopJson(const TopInterval& t);  // one line, no trailing newline

}  // namespace exitscope
