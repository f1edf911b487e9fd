// Renders a DiffReport (model/diff_model.h): RenderTextDiff for people (context, normalisation,
// verdict, reason and detail tables top movers first, thresholds), RenderJsonDiff for scripts
// (schema exitscope.diff/1, every row with both sides and the tests' p-values).
// In: a DiffReport from analysis/report_diff. Out: the whole document as a string.
#pragma once

#include <cstddef>
#include <string>

#include "model/diff_model.h"

namespace exitscope {

struct TextDiffOptions {
  size_t max_detail_rows = 20;  // the rest: "(N more; --json has all)"
  bool all_rows = false;        // also rows without any exit change (reasons are always all shown)
};

std::string RenderTextDiff(const DiffReport& diff, const TextDiffOptions& options = {});
std::string RenderJsonDiff(const DiffReport& diff);

}  // namespace exitscope
