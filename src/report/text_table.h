// The plain-text table and number spellings the text reporters share (report, diff, histogram):
// a table whose first column is left-aligned and the rest right-aligned, counts with thousands
// separators, percentages with two decimals.
#pragma once

#include <algorithm>
#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <string_view>
#include <vector>

namespace exitscope::text {

// Thousands separators make exit counts readable at a glance ("65,368").
inline std::string Count(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

inline std::string Pct(double p) { return fmt::format("{:.2f}%", p); }

// A table whose first column is left-aligned and the rest right-aligned.
class Table {
 public:
  // align: one 'l' or 'r' per column; missing columns are right-aligned, the first left.
  explicit Table(std::vector<std::string> header, std::string align = "l") : align_(std::move(align)) {
    rows_.push_back(std::move(header));
  }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  std::string Render(std::string_view indent) const {
    std::vector<size_t> w;
    for (const auto& r : rows_) {
      w.resize(std::max(w.size(), r.size()));
      for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    }
    std::string out;
    for (const auto& r : rows_) {
      std::string line(indent);
      for (size_t i = 0; i < r.size(); ++i) {
        bool left = i < align_.size() ? align_[i] == 'l' : false;
        if (i) line += "  ";
        line += left ? fmt::format("{:<{}}", r[i], w[i]) : fmt::format("{:>{}}", r[i], w[i]);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      out += line + "\n";
    }
    return out;
  }

 private:
  std::vector<std::vector<std::string>> rows_;
  std::string align_;
};

}  // namespace exitscope::text
