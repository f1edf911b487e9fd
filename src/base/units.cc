#include "base/units.h"

#include <fmt/format.h>

namespace exitscope {

std::string FormatDuration(double ns) {
  if (ns < 1000) return fmt::format("{:.0f}ns", ns);
  struct Unit {
    double div;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1e3, "us"}, {1e6, "ms"}, {1e9, "s"}};
  const Unit* u = &kUnits[0];
  for (const auto& k : kUnits) {
    if (ns >= k.div) u = &k;
  }
  double v = ns / u->div;
  if (v >= 100) return fmt::format("{:.1f}{}", v, u->name);
  if (v >= 10) return fmt::format("{:.2f}{}", v, u->name);
  return fmt::format("{:.3f}{}", v, u->name);
}

std::string FormatShare(double fraction) { return fmt::format("{:.1f}%", fraction * 100.0); }

}  // namespace exitscope
