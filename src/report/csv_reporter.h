// `report --csv`: the report's reason rows as CSV (RFC 4180: a header row, CRLF line ends, fields with
// a comma, quote or line break quoted, quotes doubled), one row per group × exit reason with every
// column the JSON report has for it. Numbers are written exactly as the JSON report writes them;
// an unknown value (JSON null) is an empty field.
// In: a Report. Out: the CSV text.
#pragma once

#include <string>

#include "model/report_model.h"

namespace exitscope {

std::string RenderCsvReport(const Report& report);

}  // namespace exitscope
