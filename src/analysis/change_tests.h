// The significance tests `exitscope diff` uses to tell a change from noise.
// Counts: the conditional binomial test of two Poisson rates — given n = n1 + n2 exits over
// exposures e1 and e2 (runs, seconds, vCPU-seconds), n1 ~ Binomial(n, e1 / (e1 + e2)) when the
// rates are equal; exact two-sided p from the regularised incomplete beta function.
// Latency: the Mann-Whitney U test on two binned histograms (ties within a bucket count half), its
// normal approximation with tie and continuity corrections; the effect is U / (n1 n2), the chance
// that an exit of the second sample took longer than one of the first.
// Holm's step-down adjustment keeps the family-wise error of many rows at alpha.
// Assumption: exits are independent events (bursts make the count test too eager: hence the diff's
// minimum change as well as alpha).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "model/report_model.h"

namespace exitscope {

// Two-sided p of "n1 over e1 and n2 over e2 come from the same rate"; 1 when n1 + n2 == 0.
double PoissonRateTestP(uint64_t n1, double e1, uint64_t n2, double e2);

struct RankTest {
  double p = 1;         // two-sided
  double effect = 0.5;  // P(b > a) + P(b == a) / 2
};
// Mann-Whitney U of histogram b against a (bins ascending, matched by lo_ns); absent when either
// side has fewer than kMinRankSample values.
inline constexpr uint64_t kMinRankSample = 8;
std::optional<RankTest> MannWhitneyBinned(const std::vector<HistogramBin>& a, const std::vector<HistogramBin>& b);

// Holm-Bonferroni: p-values adjusted in place (monotone, capped at 1).
void HolmAdjust(std::vector<double*> ps);

// Regularised incomplete beta I_x(a, b), for the tests (exposed for unit tests).
double RegularizedBeta(double a, double b, double x);

}  // namespace exitscope
