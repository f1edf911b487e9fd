// Two reports → one DiffReport (model/diff_model.h): rows matched by exit reason name and by detail
// key (kind, key, access, size), each side normalised (per run, second or vCPU-second), the count
// and latency tests of analysis/change_tests.h with Holm's adjustment, top movers first, a verdict
// line and the --fail-if thresholds evaluated.
// In: Reports built by BuildReport with GroupBy::kReason and ReportOptions::histograms. Out: the
// DiffReport, or a usage error when the two traces' times cannot be compared (different units).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "model/diff_model.h"
#include "model/report_model.h"

namespace exitscope {

struct DiffOptions {
  std::optional<DiffNormalize> normalize;         // none: auto (see DiffReports)
  double alpha = 0.01;                            // family-wise, after Holm
  double min_change_pct = 5;                      // a count change smaller than this is never beyond noise
  double min_effect = 0.05;                       // |P(after slower) - 0.5| a latency change must reach
  std::optional<double> from_s, to_s;             // the window both reports were filtered to
  std::string before_selection, after_selection;  // "pid 4242" … for the context lines
  std::vector<DiffThreshold> thresholds;
};

// Auto normalisation: per vCPU-second when the sides' vCPU thread counts differ, else per second when
// their durations differ by more than kAutoDurationTolerance, else per run (raw counts).
inline constexpr double kAutoDurationTolerance = 0.10;

Result<DiffReport> DiffReports(const Report& before, const Report& after, const DiffOptions& options);

}  // namespace exitscope
