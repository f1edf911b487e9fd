// perf.data damage that used to give a quiet, smaller answer (issue 19): a header attr_size off by
// one (0 events, exit 0), a flipped sample_type bit and a format ID out of range (every kvm_entry
// dropped as "info" and the user told kvm_entry was not recorded). Made from a real shared file.
#include <gtest/gtest.h>

#include "damage_test.h"

namespace exitscope::testing {
namespace {

// perf 6.1, `perf record -e 'kvm:*' -a`; perf kvm stat counts 2,613 exits (its README).
const char kProbe[] = "nested-svm-6.1/kvmprobe-200.perf.data";
// struct perf_file_header (tools/perf/util/header.h): magic, size, attr_size, attrs {offset, size}.
constexpr size_t kAttrSizeAt = 16, kAttrsAt = 24;
// struct perf_event_attr (include/uapi/linux/perf_event.h): config at 8, sample_type at 24.
constexpr size_t kConfigAt = 8, kSampleTypeAt = 24;
constexpr uint64_t kSamplePeriod = 1ull << 8;  // PERF_SAMPLE_PERIOD

TEST(PerfdataDamage, AttrSizeOffByOneIsAnErrorWithHint) {
  std::string f = ReadShared(kProbe);
  uint64_t attr_size = LoadAt<uint64_t>(f, kAttrSizeAt);
  for (uint64_t bad : {attr_size + 1, attr_size - 1}) {
    std::string d = f;
    StoreAt<uint64_t>(&d, kAttrSizeAt, bad);
    DamageRun r = RunOnDamaged("attr.perf.data", d, "report");
    EXPECT_EQ(r.status, 65) << r.out;
    EXPECT_TRUE(Has(r.out, "error: ")) << r.out;
    EXPECT_TRUE(Has(r.out, "attr_size " + std::to_string(bad))) << r.out;
    EXPECT_TRUE(Has(r.out, "hint: ")) << r.out;
  }
}

// kvm_entry's attr (the one whose config is kvm_entry's format ID) loses PERIOD: each of its samples
// then reads the period as RAW's size.
TEST(PerfdataDamage, SampleTypeBitFlipIsFlaggedNotCalledUnrecorded) {
  std::string f = ReadShared(kProbe);
  size_t id_at = f.find("name: kvm_entry\nID: ");
  ASSERT_NE(id_at, std::string::npos);
  uint64_t entry_id = std::stoull(f.substr(id_at + 20, 8));
  uint64_t attr_size = LoadAt<uint64_t>(f, kAttrSizeAt), attrs = LoadAt<uint64_t>(f, kAttrsAt);
  uint64_t n = LoadAt<uint64_t>(f, kAttrsAt + 8) / attr_size;
  bool flipped = false;
  for (uint64_t i = 0; i < n; ++i) {
    size_t a = attrs + i * attr_size;
    if (LoadAt<uint64_t>(f, a + kConfigAt) != entry_id) continue;
    uint64_t st = LoadAt<uint64_t>(f, a + kSampleTypeAt);
    ASSERT_TRUE(st & kSamplePeriod);
    StoreAt<uint64_t>(&f, a + kSampleTypeAt, st ^ kSamplePeriod);
    flipped = true;
  }
  ASSERT_TRUE(flipped);
  DamageRun r = RunOnDamaged("st.perf.data", f, "report");
  EXPECT_EQ(r.status, 65) << r.out;
  EXPECT_TRUE(Has(r.out, "PARTIAL RESULT: ")) << r.out;
  EXPECT_TRUE(Has(r.out, "perfdata.sample_size_mismatch")) << r.out;
  EXPECT_FALSE(Has(r.out, "kvm_entry was not recorded")) << r.out;
}

// "ID: 1428" → "ID:71428": past the u16 a record's common_type holds, so the format is dropped.
TEST(PerfdataDamage, FormatIdOutOfRangeIsFlaggedNotCalledUnrecorded) {
  std::string f = ReadShared(kProbe);
  size_t id_at = f.find("name: kvm_entry\nID: ");
  ASSERT_NE(id_at, std::string::npos);
  f[id_at + 19] = '7';
  DamageRun r = RunOnDamaged("id.perf.data", f, "report");
  EXPECT_EQ(r.status, 65) << r.out;
  EXPECT_TRUE(Has(r.out, "PARTIAL RESULT: ")) << r.out;
  EXPECT_TRUE(Has(r.out, "decode.unknown_event_id")) << r.out;
  EXPECT_FALSE(Has(r.out, "kvm_entry was not recorded")) << r.out;
  EXPECT_TRUE(Has(r.out, "no kvm_entry could be read")) << r.out;
}

TEST(PerfdataDamage, CutHeaderSaysHowShortWithHint) {
  std::string f = ReadShared(kProbe).substr(0, 40);
  DamageRun r = RunOnDamaged("40.perf.data", f, "report");
  EXPECT_EQ(r.status, 65) << r.out;
  EXPECT_TRUE(Has(r.out, "is 40 bytes, shorter than its 104-byte perf.data header")) << r.out;
  EXPECT_TRUE(Has(r.out, "hint: ")) << r.out;
}

// Wherever the file is cut, an error names the cause and a hint the way out.
TEST(PerfdataDamage, EveryCutGivesAHint) {
  const std::string whole = ReadShared(kProbe);
  for (size_t cut : {8, 16, 40, 103, 104, 1000, 14000, 14900, 200000}) {
    DamageRun r = RunOnDamaged("cut.perf.data", whole.substr(0, cut), "report");
    EXPECT_NE(r.status, 0) << cut;
    if (Has(r.out, "error: "))
      EXPECT_TRUE(Has(r.out, "hint: ")) << cut << ": " << r.out;
    else
      EXPECT_TRUE(Has(r.out, "PARTIAL RESULT: ")) << cut << ": " << r.out;
  }
}

}  // namespace
}  // namespace exitscope::testing
