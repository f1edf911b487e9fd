// `report --histogram REASON`: a terminal histogram of one exit reason's handling time per group, on
// log buckets (a fixed number per power of two, chosen so the range fits ~32 lines), each line its
// bounds, a bar scaled to the fullest bucket, the count and share, and the buckets holding p50 and
// p99 marked.
// In: a Report built with ReportOptions::histograms, and which reason rows to draw. Out: text.
#pragma once

#include <functional>
#include <string>

#include "model/report_model.h"

namespace exitscope {

// `selected` picks the reason rows (the CLI matches --histogram's name in each ISA).
std::string RenderTextHistogram(const Report& report, const std::function<bool(const ReasonRow&)>& selected,
                                const std::string& reason_text);

}  // namespace exitscope
