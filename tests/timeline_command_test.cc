// `exitscope timeline` as a user runs it: the file written to stdout (-o -) is the file written to a
// path, whichever reader the input takes (perf.data in rounds on every thread, an uncompressed
// trace.dat in slices, which stdout reads with one thread since it cannot start over, compressed).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "test_util.h"

namespace exitscope {
namespace {

const std::string kBin = EXITSCOPE_BINARY;
const std::string kShared = EXITSCOPE_SHARED_DIR;

std::string Slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(TimelineCommand, StdoutIsTheFileWhateverTheReader) {
  const std::string run = kShared + "/traces/nested-svm-6.1/dual-5000/";
  const std::string v6 = ::testing::TempDir() + "timeline-v6.dat";
  ASSERT_EQ(testing::RunCommand("trace-cmd convert -i " + run + "trace.dat -o " + v6 + " --file-version 6").status, 0);
  const std::string file = ::testing::TempDir() + "timeline.json";
  for (const std::string input : {run + "perf.data", run + "trace.dat", v6}) {
    for (const std::string threads : {"-j 1", "-j 3"}) {
      auto to_file = testing::RunCommand(kBin + " timeline " + threads + " -o " + file + " " + input + " 2>/dev/null");
      ASSERT_EQ(to_file.status, 0) << input;
      auto to_stdout = testing::RunCommand(kBin + " timeline " + threads + " -o - " + input + " 2>/dev/null");
      ASSERT_EQ(to_stdout.status, 0) << input;
      const std::string written = Slurp(file);
      EXPECT_GT(written.size(), 1000000u) << input;
      EXPECT_TRUE(written == to_stdout.out) << input << " " << threads << ": " << written.size() << " bytes written, "
                                            << to_stdout.out.size() << " on stdout";
    }
  }
  std::remove(file.c_str());
  std::remove(v6.c_str());
}

}  // namespace
}  // namespace exitscope
