#include "report/csv_reporter.h"

#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "base/units.h"

namespace exitscope {
namespace {

std::string Quote(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// The JSON reporter's own spelling of a number (nlohmann's shortest round-trip form for doubles).
template <typename T>
std::string Num(T v) {
  return nlohmann::json(v).dump();
}
template <typename T>
std::string Known(bool known, T v) {
  return known ? Num(v) : std::string();
}

constexpr const char* kColumns[] = {
    "group_kind",   "group_id",        "group_label",  "reason",   "isa",      "code",       "count",
    "timed_count",  "untimed_count",   "pct_count",    "pct_time", "total_ns", "blocked_ns", "min_ns",
    "mean_ns",      "p50_ns",          "p90_ns",       "p99_ns",   "p999_ns",  "max_ns",     "userspace_count",
    "userspace_ns", "in_kernel_count", "in_kernel_ns", "time_unit"};

}  // namespace

std::string RenderCsvReport(const Report& r) {
  std::string out;
  auto line = [&](const std::vector<std::string>& fields) {
    for (size_t i = 0; i < fields.size(); ++i) out += (i ? "," : "") + Quote(fields[i]);
    out += "\r\n";
  };
  line(std::vector<std::string>(std::begin(kColumns), std::end(kColumns)));
  const bool vmm = r.totals.userspace_known;
  const std::string unit(TimeUnitName(r.context.time_unit));
  for (const auto& g : r.groups) {
    for (const auto& row : g.reasons) {
      const DurationStats& s = row.stats;
      const bool timed = s.count != 0;
      line({g.kind,
            Num(g.id),
            g.label,
            row.name,
            std::string(IsaName(row.isa)),
            Num(row.code),
            Num(row.count),
            Num(s.count),
            Num(row.count - s.count),
            Num(row.pct_count),
            Known(timed, row.pct_time),
            Known(timed, s.total_ns),
            Known(timed, row.blocked_ns),
            Known(timed, s.min_ns),
            Known(timed, s.mean_ns),
            Known(timed, s.p50_ns),
            Known(timed, s.p90_ns),
            Known(timed, s.p99_ns),
            Known(timed, s.p999_ns),
            Known(timed, s.max_ns),
            Known(vmm, row.userspace_count),
            Known(vmm, row.userspace_ns),
            Known(vmm, s.count - row.userspace_count),
            Known(vmm, s.total_ns - row.userspace_ns),
            unit});
    }
  }
  return out;
}

}  // namespace exitscope
