// base/append_number.h against fmt, the formatter it stands in for in `dump`: every edge value
// and a sweep, so a dump line reads byte for byte as it did when fmt printed it.
#include <gtest/gtest.h>
#include <fmt/format.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "base/append_number.h"

namespace exitscope {
namespace {

std::vector<uint64_t> Values() {
  std::vector<uint64_t> v = {0, std::numeric_limits<uint64_t>::max(), 10000000000000000000ull};
  for (int shift = 4; shift < 64; shift += 4) {  // hex digit counts
    const uint64_t p = uint64_t{1} << shift;
    v.insert(v.end(), {p - 1, p, p + 1});
  }
  for (uint64_t p = 1; p && p <= UINT64_MAX / 10; p *= 10) v.insert(v.end(), {p - 1, p, p + 1});
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) v.push_back(rng() >> (rng() % 64));
  return v;
}

TEST(AppendNumber, AsFmtPrintsThem) {
  for (uint64_t u : Values()) {
    std::string s = "x";
    AppendDecimal(&s, u);
    EXPECT_EQ(s, fmt::format("x{}", u));
    s.clear();
    AppendHex(&s, u);
    EXPECT_EQ(s, fmt::format("{:#x}", u));
    for (int width : {3, 6, 9}) {
      s.clear();
      AppendPadded(&s, u, width);
      EXPECT_EQ(s, fmt::format("{:0{}}", u, width)) << width;
    }
    const auto i = static_cast<int64_t>(u);
    for (int64_t v : {i, -i, i / 2, -(i / 2)}) {
      s.clear();
      AppendSigned(&s, v);
      EXPECT_EQ(s, fmt::format("{}", v));
    }
  }
  std::string s;
  AppendSigned(&s, std::numeric_limits<int64_t>::min());
  EXPECT_EQ(s, "-9223372036854775808");
}

}  // namespace
}  // namespace exitscope
