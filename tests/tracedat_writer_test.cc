// The trace.dat v7 writer, checked against Debian's trace-cmd as the oracle: the real ring-buffer pages
// of a recording made by trace-cmd on a real KVM host are re-written by our writer, and
// `trace-cmd report` must print the same thing for both files. The pages are taken out of the original
// with a small extractor kept here (test-only; the project's reader is the reader engineer's).
#include <gtest/gtest.h>
#include <zstd.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "sinks/tracedat_writer.h"
#include "sources/tracedat/tracedat_format.h"
#include "model/event_source.h"
#include "test_util.h"
#include "pipeline/input_detector.h"
#include "tracedat_extract.h"

namespace exitscope {
namespace {

const std::string kTrace = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat";

using testing::ReadFile;

using testing::Extract;
using testing::Extracted;

std::string RunShell(const std::string& cmd) { return testing::ReadCommand(cmd); }

class TraceDatWriterTest : public ::testing::Test {
 protected:
  std::string out_ =
      (std::filesystem::temp_directory_path() / ("exitscope-writer-" + std::to_string(::getpid()) + ".dat")).string();
  void TearDown() override { std::filesystem::remove(out_); }
};

TEST_F(TraceDatWriterTest, RewrittenRealPagesReportIdenticallyWithTraceCmd) {
  ASSERT_TRUE(std::filesystem::exists(kTrace)) << kTrace;
  std::string f = ReadFile(kTrace);
  Extracted x = Extract(f);
  ASSERT_EQ(x.meta.cpu_count, 2u);
  ASSERT_EQ(x.cpu_pages.size(), 2u);
  ASSERT_FALSE(x.meta.header_page.empty());
  ASSERT_EQ(x.meta.systems.size(), 1u);
  EXPECT_EQ(x.meta.systems[0].name, "kvm");

  x.meta.pages_per_chunk = 3;  // several chunks, and a partial last one, on the busy CPU
  auto w = TraceDatWriter::Create(out_, x.meta);
  ASSERT_TRUE(w.ok()) << w.error().message;
  // Interleave the CPUs page by page, as the live recorder does.
  const uint32_t ps = x.meta.page_size;
  size_t max_pages = std::max(x.cpu_pages[0].size(), x.cpu_pages[1].size()) / ps;
  for (size_t i = 0; i < max_pages; ++i) {
    for (uint32_t cpu = 0; cpu < 2; ++cpu) {
      if ((i + 1) * ps > x.cpu_pages[cpu].size()) continue;
      auto* p = reinterpret_cast<const uint8_t*>(x.cpu_pages[cpu].data()) + i * ps;
      ASSERT_TRUE((*w)->AddPages(cpu, {p, ps}).ok());
    }
  }
  ASSERT_TRUE((*w)->Finish(x.cpustats).ok());

  std::string want = RunShell("trace-cmd report -i '" + kTrace + "' 2>&1");
  std::string got = RunShell("trace-cmd report -i '" + out_ + "' 2>&1");
  ASSERT_GT(want.size(), 100000u);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "first difference at byte "
                           << std::mismatch(got.begin(), got.end(), want.begin(), want.end()).first - got.begin();
  // The re-written file must round-trip through our own extractor too.
  Extracted back = Extract(ReadFile(out_));
  EXPECT_EQ(back.cpu_pages, x.cpu_pages);
  EXPECT_EQ(back.meta.uname, x.meta.uname);
  EXPECT_EQ(back.cpustats, x.cpustats);
  // And the project's own reader (what `exitscope report` uses) sees every event of the original.
  auto count = [](const std::string& path) {
    auto src = OpenKvmEventSource(path);
    EXPECT_TRUE(src.ok()) << path;
    uint64_t n = 0;
    KvmEvent e;
    if (src.ok()) {
      while ((*src)->Next(&e, nullptr)) ++n;
    }
    return n;
  };
  uint64_t original = count(kTrace);
  EXPECT_GT(original, 10000u);
  EXPECT_EQ(count(out_), original);
}

TEST_F(TraceDatWriterTest, CpuWithoutPagesAndNoKallsymsStillReads) {
  Extracted x = Extract(ReadFile(kTrace));
  x.meta.kallsyms.clear();
  x.meta.printk_formats.clear();
  x.meta.cpu_count = 3;  // CPU 2 recorded nothing
  auto w = TraceDatWriter::Create(out_, x.meta);
  ASSERT_TRUE(w.ok());
  const auto& p = x.cpu_pages[1];
  ASSERT_TRUE((*w)->AddPages(1, {reinterpret_cast<const uint8_t*>(p.data()), p.size()}).ok());
  ASSERT_TRUE((*w)->Finish({}).ok());
  std::string got = RunShell("trace-cmd report -i '" + out_ + "' 2>&1");
  EXPECT_NE(got.find("cpus=3"), std::string::npos) << got.substr(0, 500);
  // Every kvm_exit of CPU 1 in the original is in the new file.
  std::string want = RunShell("trace-cmd report --cpu 1 -i '" + kTrace + "' 2>/dev/null | grep -c kvm_exit:");
  std::string have = RunShell("trace-cmd report -i '" + out_ + "' 2>/dev/null | grep -c kvm_exit:");
  EXPECT_EQ(have, want);
  EXPECT_GT(std::stoi(have), 1000);
}

TEST_F(TraceDatWriterTest, RejectsPartialPagesAndUnknownCpus) {
  TraceDatMeta m;
  m.cpu_count = 1;
  auto w = TraceDatWriter::Create(out_, m);
  ASSERT_TRUE(w.ok());
  std::vector<uint8_t> half(m.page_size / 2);
  EXPECT_FALSE((*w)->AddPages(0, half).ok());
  std::vector<uint8_t> page(m.page_size);
  EXPECT_FALSE((*w)->AddPages(1, page).ok());
  EXPECT_TRUE((*w)->AddPages(0, page).ok());
}

TEST_F(TraceDatWriterTest, UnfinishedFileIsRemoved) {
  TraceDatMeta m;
  m.cpu_count = 1;
  {
    auto w = TraceDatWriter::Create(out_, m);
    ASSERT_TRUE(w.ok());
    EXPECT_TRUE(std::filesystem::exists(out_));
  }
  EXPECT_FALSE(std::filesystem::exists(out_));
}

TEST_F(TraceDatWriterTest, UnwritableDirectoryIsAnError) {
  auto w = TraceDatWriter::Create("/nonexistent-dir/x.dat", TraceDatMeta{});
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().tag, "tracedat.write");
}

}  // namespace
}  // namespace exitscope
