#include "base/units.h"

#include <fmt/format.h>

#include <iterator>

namespace exitscope {

std::string FormatDuration(double v, TimeUnit unit) {
  if (unit != TimeUnit::kNs) {
    // Not time: an SI prefix on the trace's own unit, never s/ns ("1.23Mcyc").
    std::string_view name = unit == TimeUnit::kCycles ? "cyc" : unit == TimeUnit::kCount ? "cnt" : "raw";
    if (v < 1000) return fmt::format("{:.0f}{}", v, name);
    static constexpr std::string_view kPrefix[] = {"k", "M", "G", "T", "P"};
    size_t i = 0;
    for (v /= 1000; v >= 1000 && i + 1 < std::size(kPrefix); ++i) v /= 1000;
    return fmt::format("{:.{}f}{}{}", v, v >= 100 ? 1 : v >= 10 ? 2 : 3, kPrefix[i], name);
  }
  if (v < 1000) return fmt::format("{:.0f}ns", v);
  struct Unit {
    double div;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1e3, "us"}, {1e6, "ms"}, {1e9, "s"}};
  const Unit* u = &kUnits[0];
  for (const auto& k : kUnits) {
    if (v >= k.div) u = &k;
  }
  v /= u->div;
  if (v >= 100) return fmt::format("{:.1f}{}", v, u->name);
  if (v >= 10) return fmt::format("{:.2f}{}", v, u->name);
  return fmt::format("{:.3f}{}", v, u->name);
}

}  // namespace exitscope
