// Renders an Advice: a text page for humans (biggest saving first, each finding with evidence, RIPs
// and the fix; then what was checked and not flagged) and a JSON document with a schema version.
#pragma once

#include <string>

#include "advise/advisor.h"

namespace exitscope {

inline constexpr int kAdviseJsonSchemaVersion = 1;

std::string RenderAdviceText(const Advice& advice, const std::string& source);
std::string RenderAdviceJson(const Advice& advice, const std::string& source);

}  // namespace exitscope
