// Replays every input kept in tests/data/regress/<target>/ (crashes the fuzzers once found, and the
// seed corpora fuzz/corpus/<target>/) through the fuzz target bodies: each must run to the end under
// this build's checks (the sanitizer build in CI makes out-of-bounds reads fail here).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "fuzz_targets.h"

namespace exitscope {
namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

size_t ReplayDir(const FuzzTarget& t, const fs::path& dir) {
  size_t n = 0;
  if (!fs::is_directory(dir)) return 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (!e.is_regular_file()) continue;
    SCOPED_TRACE(e.path().string());
    std::vector<uint8_t> bytes = ReadAll(e.path());
    EXPECT_EQ(t.run(bytes.data(), bytes.size()), 0);
    ++n;
  }
  return n;
}

TEST(FuzzRegress, KeptCrashInputsRunClean) {
  size_t total = 0;
  for (const FuzzTarget& t : FuzzTargets()) {
    total += ReplayDir(t, fs::path(EXITSCOPE_TESTDATA_DIR) / "regress" / t.name);
  }
  // The regression set is not empty once a fuzzer has found something; the seeds below always are.
  RecordProperty("regress_inputs", static_cast<int>(total));
}

TEST(FuzzRegress, SeedCorporaRunClean) {
  fs::path corpus = fs::path(EXITSCOPE_TESTDATA_DIR) / ".." / ".." / "fuzz" / "corpus";
  for (const FuzzTarget& t : FuzzTargets()) {
    SCOPED_TRACE(t.name);
    EXPECT_GT(ReplayDir(t, corpus / t.name), 0u) << "no seeds for " << t.name;
  }
}

// Cut copies of a real seed at every length: the reader must stop cleanly wherever a file ends.
TEST(FuzzRegress, TruncatedSeedsRunClean) {
  fs::path seed =
      fs::path(EXITSCOPE_TESTDATA_DIR) / ".." / ".." / "fuzz" / "corpus" / "tracedat" / "kvmprobe-200-1page.dat";
  std::vector<uint8_t> bytes = ReadAll(seed);
  ASSERT_GT(bytes.size(), 4096u);
  for (size_t len = 0; len < bytes.size(); len += 97) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + len);  // own buffer: ASan sees the end
    EXPECT_EQ(FuzzTraceDat(cut.data(), cut.size()), 0);
  }
}

}  // namespace
}  // namespace exitscope
