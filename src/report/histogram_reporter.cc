#include "report/histogram_reporter.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <vector>

#include "base/units.h"
#include "report/text_table.h"

namespace exitscope {
namespace {

using text::Count;

constexpr int kMaxLines = 32;
constexpr int kBarWidth = 40;

struct Bucket {
  double lo = 0, hi = 0;  // [lo, hi)
  uint64_t count = 0;
};

// Log buckets over [min, max]: per_octave of them per power of two, aligned on powers of two so
// two histograms of the same reason line up.
std::vector<Bucket> Rebin(const std::vector<HistogramBin>& bins, int* per_octave) {
  std::vector<Bucket> out;
  if (bins.empty()) return out;
  // A time of 0 (a HLT whose whole time was blocked) has no log: it gets a bucket [0, 1) of its own.
  uint64_t zeros = 0;
  for (const auto& b : bins) zeros += b.lo_ns == 0 ? b.count : 0;
  if (zeros == bins.front().count && bins.size() == 1) {
    *per_octave = 1;
    return {Bucket{0, 1, zeros}};
  }
  const auto first = std::find_if(bins.begin(), bins.end(), [](const HistogramBin& b) { return b.lo_ns > 0; });
  const double lo = std::max<double>(1, static_cast<double>(first->lo_ns));
  const double hi = std::max<double>(lo + 1, static_cast<double>(bins.back().hi_ns) + 1);
  const double first_oct = std::floor(std::log2(lo)), last_oct = std::ceil(std::log2(hi));
  const double octaves = std::max(1.0, last_oct - first_oct);
  *per_octave = std::clamp(static_cast<int>(kMaxLines / octaves), 1, 8);
  const double step = 1.0 / *per_octave;
  // Index of the bucket a value falls in, counted from 2^first_oct.
  auto index = [&](double v) {
    return static_cast<int>(std::floor((std::log2(std::max(1.0, v)) - first_oct) / step + 1e-9));
  };
  const int n = std::max(1, index(hi - 1) + 1);
  out.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    out[i].lo = std::exp2(first_oct + i * step);
    out[i].hi = std::exp2(first_oct + (i + 1) * step);
  }
  for (const auto& b : bins) {
    if (b.lo_ns == 0) continue;
    int i = std::clamp(index(static_cast<double>(b.lo_ns)), 0, n - 1);
    out[static_cast<size_t>(i)].count += b.count;
  }
  // Leading and trailing empty buckets say nothing.
  while (!out.empty() && out.back().count == 0) out.pop_back();
  size_t skip = 0;
  while (skip < out.size() && out[skip].count == 0) ++skip;
  out.erase(out.begin(), out.begin() + static_cast<long>(skip));
  if (zeros) out.insert(out.begin(), Bucket{0, 1, zeros});
  return out;
}

std::string Draw(const ReasonRow& row, TimeUnit unit) {
  const DurationStats& s = row.stats;
  std::string out;
  if (s.count == 0) {
    return fmt::format("  no timed {} exit ({} counted without a time)\n", row.name, Count(row.count));
  }
  int per_octave = 1;
  std::vector<Bucket> buckets = Rebin(row.histogram, &per_octave);
  uint64_t fullest = 0;
  for (const auto& b : buckets) fullest = std::max(fullest, b.count);
  out += fmt::format("  {} timed exits{} · log buckets, {} per power of two · p50 {} · p99 {} · max {}\n",
                     Count(s.count), row.count != s.count ? fmt::format(" (of {})", Count(row.count)) : "", per_octave,
                     FormatDuration(s.p50_ns, unit), FormatDuration(s.p99_ns, unit), FormatDuration(s.max_ns, unit));
  std::vector<std::vector<std::string>> lines;
  size_t w_lo = 0, w_hi = 0, w_n = 0;
  for (const auto& b : buckets) {
    const auto p50 = static_cast<double>(s.p50_ns), p99 = static_cast<double>(s.p99_ns);
    std::string mark;
    if (p50 >= b.lo && p50 < b.hi) mark += " ◄ p50";
    if (p99 >= b.lo && p99 < b.hi) mark += " ◄ p99";
    int bar =
        fullest ? static_cast<int>(std::lround(kBarWidth * static_cast<double>(b.count) / static_cast<double>(fullest)))
                : 0;
    if (b.count && bar == 0) bar = 1;
    std::string bars;
    for (int i = 0; i < bar; ++i) bars += "█";
    lines.push_back({FormatDuration(b.lo, unit), FormatDuration(b.hi, unit), Count(b.count),
                     fmt::format("{:5.1f}%", 100.0 * static_cast<double>(b.count) / static_cast<double>(s.count)),
                     bars + std::string(static_cast<size_t>(kBarWidth - bar), ' '), mark});
    w_lo = std::max(w_lo, lines.back()[0].size());
    w_hi = std::max(w_hi, lines.back()[1].size());
    w_n = std::max(w_n, lines.back()[2].size());
  }
  for (const auto& l : lines) {
    std::string line =
        fmt::format("  {:>{}} – {:<{}} {:>{}} {} |{}|{}", l[0], w_lo, l[1], w_hi, l[2], w_n, l[3], l[4], l[5]);
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  }
  return out;
}

}  // namespace

std::string RenderTextHistogram(const Report& r, const std::function<bool(const ReasonRow&)>& selected,
                                const std::string& reason_text) {
  std::string out;
  if (r.partial)
    out += "PARTIAL RESULT: the trace lost events or held malformed data (`exitscope report` lists them)\n\n";
  out += fmt::format("exitscope report --histogram {}: {}\n", reason_text,
                     r.context.source.empty() ? "-" : r.context.source);
  out += "  handling time (exit to entry, a halted vCPU's blocked time apart), bucket [low – high)\n";
  bool any = false;
  for (const auto& g : r.groups) {
    for (const auto& row : g.reasons) {
      if (!selected(row)) continue;
      any = true;
      out += fmt::format("\n{}{}:\n", row.name, g.kind == "all" ? "" : " — " + g.label);
      out += Draw(row, r.context.time_unit);
    }
  }
  if (!any) out += fmt::format("\nno {} exits in this trace (with these filters)\n", reason_text);
  return out;
}

}  // namespace exitscope
