// Named anomaly counters (Perfetto's storage/stats.h idea): bad data never aborts a run, it bumps a
// counter with a severity. In: any stage bumps by name. Out: the non-zero counters, which every report
// prints; a data-loss or error counter makes the CLI exit non-zero (65) and flags the result partial.
// Assumption: bumps are rare (anomalies), so a small map keyed by name is fast enough.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace exitscope {

enum class Severity : uint8_t {
  kInfo,      // expected, explained (e.g. events skipped by a filter, exits before the first entry)
  kDataLoss,  // events the trace lost or we could not use: result is partial
  kError,     // malformed input
};

std::string_view SeverityName(Severity s);

struct DiagnosticCounter {
  std::string name;         // "tracedat.missed_events"
  Severity severity = Severity::kInfo;
  std::string description;  // one line for humans
  uint64_t count = 0;
};

class Diagnostics {
 public:
  // Adds n to the counter `name`; the first bump fixes its severity and description.
  void Bump(std::string_view name, Severity severity, std::string_view description, uint64_t n = 1);
  uint64_t Count(std::string_view name) const;
  // Non-zero counters in name order.
  std::vector<DiagnosticCounter> NonZero() const;
  bool HasDataLoss() const;  // any kDataLoss or kError counter non-zero
  void Merge(const Diagnostics& other);

 private:
  std::map<std::string, DiagnosticCounter, std::less<>> counters_;
};

}  // namespace exitscope
