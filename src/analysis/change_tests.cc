#include "analysis/change_tests.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace exitscope {
namespace {

// Lentz's continued fraction for the incomplete beta function (converges fast for
// x < (a + 1) / (a + b + 2); its iterations grow as sqrt(max(a, b)), ~3,000 for 10 M exits).
double BetaContinuedFraction(double a, double b, double x) {
  constexpr int kMaxIterations = 200000;
  constexpr double kEps = 1e-15, kTiny = 1e-300;
  auto fix = [&](double v) { return std::fabs(v) < kTiny ? kTiny : v; };
  const double qab = a + b, qap = a + 1, qam = a - 1;
  double c = 1, d = 1 / fix(1 - qab * x / qap), h = d;
  for (int m = 1; m <= kMaxIterations; ++m) {
    const double m2 = 2.0 * m;
    double aa = m * (b - m) * x / ((qam + m2) * (a + m2));
    d = 1 / fix(1 + aa * d);
    c = fix(1 + aa / c);
    h *= d * c;
    aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
    d = 1 / fix(1 + aa * d);
    c = fix(1 + aa / c);
    const double step = d * c;
    h *= step;
    if (std::fabs(step - 1) < kEps) break;
  }
  return h;
}

}  // namespace

double RegularizedBeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double log_front = std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return std::exp(log_front) * BetaContinuedFraction(a, b, x) / a;
  return 1 - std::exp(log_front) * BetaContinuedFraction(b, a, 1 - x) / b;
}

double PoissonRateTestP(uint64_t n1, double e1, uint64_t n2, double e2) {
  const uint64_t n = n1 + n2;
  if (n == 0 || !(e1 > 0) || !(e2 > 0)) return 1;
  const double p = e1 / (e1 + e2);
  const double k = static_cast<double>(n1), nn = static_cast<double>(n);
  // P(X <= n1) and P(X >= n1) for X ~ Binomial(n, p).
  const double lower = n1 == n ? 1.0 : 1 - RegularizedBeta(k + 1, nn - k, p);
  const double upper = n1 == 0 ? 1.0 : RegularizedBeta(k, nn - k + 1, p);
  return std::clamp(2 * std::min(lower, upper), 0.0, 1.0);
}

std::optional<RankTest> MannWhitneyBinned(const std::vector<HistogramBin>& a, const std::vector<HistogramBin>& b) {
  double n1 = 0, n2 = 0;
  for (const auto& x : a) n1 += static_cast<double>(x.count);
  for (const auto& x : b) n2 += static_cast<double>(x.count);
  if (n1 < kMinRankSample || n2 < kMinRankSample) return std::nullopt;
  // Walk both bin lists in order: U counts, for each b value, the a values below it (ties half).
  double u = 0, a_below = 0, ties = 0;
  size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    uint64_t lo = std::min(i < a.size() ? a[i].lo_ns : UINT64_MAX, j < b.size() ? b[j].lo_ns : UINT64_MAX);
    double ca = 0, cb = 0;
    if (i < a.size() && a[i].lo_ns == lo) ca = static_cast<double>(a[i++].count);
    if (j < b.size() && b[j].lo_ns == lo) cb = static_cast<double>(b[j++].count);
    u += cb * (a_below + 0.5 * ca);
    a_below += ca;
    const double t = ca + cb;
    ties += t * t * t - t;
  }
  const double nn = n1 + n2;
  const double mean = n1 * n2 / 2;
  const double var = n1 * n2 / 12 * ((nn + 1) - ties / (nn * (nn - 1)));
  RankTest r;
  r.effect = u / (n1 * n2);
  if (!(var > 0)) return r;  // every value in one bucket: nothing tells the samples apart
  const double z = std::max(0.0, std::fabs(u - mean) - 0.5) / std::sqrt(var);
  r.p = std::erfc(z / std::sqrt(2.0));
  return r;
}

void HolmAdjust(std::vector<double*> ps) {
  std::sort(ps.begin(), ps.end(), [](const double* x, const double* y) { return *x < *y; });
  const double m = static_cast<double>(ps.size());
  double running = 0;
  for (size_t k = 0; k < ps.size(); ++k) {
    running = std::max(running, std::min(1.0, (m - static_cast<double>(k)) * *ps[k]));
    *ps[k] = running;
  }
}

}  // namespace exitscope
