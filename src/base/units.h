// The one way exitscope writes durations, rates and shares for people (issue 13: advise, top, the RIP
// view and report each had their own). In: nanoseconds (double or integer). Out: "850ns", "4.193ms",
// "459.8us", "2.148s" — three or four significant digits and no space, as the report's tables
// always printed them, so a number reads the same in every command.
#pragma once

#include <cstdint>
#include <string>

namespace exitscope {

std::string FormatDuration(double ns);
inline std::string FormatDuration(uint64_t ns) { return FormatDuration(static_cast<double>(ns)); }
// "12.3%" of a fraction 0..1.
std::string FormatShare(double fraction);

}  // namespace exitscope
