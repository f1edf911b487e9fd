// Named anomaly counters (Perfetto's storage/stats.h idea): bad data never aborts a run, it bumps a
// counter with a severity. In: any stage bumps an id declared in model/diagnostic_ids.h. Out: the
// non-zero counters, which every report prints; a data-loss or error counter makes the CLI exit
// non-zero (65) and flags the result partial.
// Assumption: bumps are rare (anomalies), so a small map keyed by name is fast enough.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "model/diagnostic_ids.h"

namespace exitscope {

std::string_view SeverityName(Severity s);

struct DiagnosticCounter {
  std::string name;  // "tracedat.missed_events"
  Severity severity = Severity::kInfo;
  std::string description;  // one line for humans
  uint64_t count = 0;
};

class Diagnostics {
 public:
  // Adds n to counter `id` (name, severity and meaning from model/diagnostic_ids.h).
  void Bump(DiagId id, uint64_t n = 1);
  // A counter with a sub-name, "<id's name>.<key>" (decode.missing_field.kvm_exit.vcpu_id).
  void Bump(DiagId id, std::string_view key, uint64_t n = 1);
  uint64_t Count(DiagId id) const;
  // By printed name (tests, and sub-named counters).
  uint64_t Count(std::string_view name) const;
  // Non-zero counters in name order.
  std::vector<DiagnosticCounter> NonZero() const;
  bool HasDataLoss() const;  // any kDataLoss or kError counter non-zero
  void Merge(const Diagnostics& other);

 private:
  // By printed name: ids resolve to this; Merge keeps the other side's counters as they are.
  void Bump(std::string_view name, Severity severity, std::string_view description, uint64_t n);
  std::map<std::string, DiagnosticCounter, std::less<>> counters_;
};

}  // namespace exitscope
