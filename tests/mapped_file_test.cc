// MappedFile: the one input-bytes class of every reader (trace.dat, perf.data, text).
#include "sources/mapped_file.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

namespace exitscope {
namespace {

const std::string kTrace =
    std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/kvmprobe-200.trace-cmd-report.txt";

std::string Slurp(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

std::string AsString(const MappedFile& f) {
  return std::string(reinterpret_cast<const char*>(f.bytes().data()), f.bytes().size());
}

TEST(MappedFileTest, RegularFileBytesEqualTheFile) {
  auto f = MappedFile::Open(kTrace);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(AsString(**f), Slurp(kTrace));
  EXPECT_EQ((*f)->path(), kTrace);
  (*f)->Release(0, (*f)->bytes().size());  // advisory only: the bytes stay readable
  EXPECT_EQ(AsString(**f), Slurp(kTrace));
}

TEST(MappedFileTest, FifoIsReadWhole) {
  std::string fifo = (std::filesystem::temp_directory_path() / ("exitscope-fifo-" + std::to_string(getpid()))).string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::string want = Slurp(kTrace);
  std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << want; });
  auto f = MappedFile::Open(fifo);
  writer.join();
  ::unlink(fifo.c_str());
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(AsString(**f), want);
}

TEST(MappedFileTest, MissingAndDirectoryAreNamedErrors) {
  auto missing = MappedFile::Open("/nonexistent/trace.dat");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().tag, "input.missing");
  auto dir = MappedFile::Open(std::filesystem::temp_directory_path().string());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().tag, "input.not-a-file");
}

}  // namespace
}  // namespace exitscope
