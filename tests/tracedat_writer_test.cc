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

namespace exitscope {
namespace {

const std::string kTrace =
    std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat";

using testing::ReadFile;

template <typename T>
T Get(const std::string& b, size_t off) {
  T v{};
  if (off + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

std::string Unzstd(const std::string& b, size_t off, uint32_t csize, uint32_t usize) {
  std::string out(usize, '\0');
  size_t n = ZSTD_decompress(out.data(), usize, b.data() + off, csize);
  EXPECT_FALSE(ZSTD_isError(n));
  return out;
}

// Everything our writer needs, taken from a trace-cmd v7 zstd file.
struct Extracted {
  TraceDatMeta meta;
  std::vector<std::string> cpu_pages;  // concatenated pages per CPU
  std::vector<std::string> cpustats;
};

// A section's uncompressed body (compressed sections: {csize, usize, zstd frame}).
std::string SectionBody(const std::string& f, uint64_t off, uint16_t* id) {
  *id = Get<uint16_t>(f, off);
  uint16_t flags = Get<uint16_t>(f, off + 2);
  uint64_t size = Get<uint64_t>(f, off + 8);
  if (flags & kSectionCompressed) return Unzstd(f, off + 24, Get<uint32_t>(f, off + 16), Get<uint32_t>(f, off + 20));
  return f.substr(off + 16, size);
}

Extracted Extract(const std::string& f) {
  Extracted x;
  size_t p = 10;
  EXPECT_EQ(f.substr(p, 2), std::string("7\0", 2));
  p += 2 + 2;
  x.meta.page_size = Get<uint32_t>(f, p);
  p += 4;
  p += std::strlen(f.data() + p) + 1;  // "zstd"
  p += std::strlen(f.data() + p) + 1;  // version
  uint64_t opt_off = Get<uint64_t>(f, p);
  while (opt_off) {
    uint16_t id;
    std::string opts = SectionBody(f, opt_off, &id);
    EXPECT_EQ(id, 0);
    opt_off = 0;
    for (size_t q = 0; q + 6 <= opts.size();) {
      uint16_t oid = Get<uint16_t>(opts, q);
      uint32_t osz = Get<uint32_t>(opts, q + 2);
      std::string d = opts.substr(q + 6, osz);
      q += 6 + osz;
      auto str = [&d] { return std::string(d.c_str()); };
      switch (oid) {
        case kOptDone: opt_off = Get<uint64_t>(d, 0); break;
        case kOptCpuStat: x.cpustats.push_back(str()); break;
        case kOptTraceClock: x.meta.trace_clock = str(); break;
        case kOptUname: x.meta.uname = str(); break;
        case kOptCpuCount: x.meta.cpu_count = Get<uint32_t>(d, 0); break;
        case kOptVersion: x.meta.version = str(); break;
        case kOptBuffer: {
          size_t r = 8;
          x.meta.instance_name = d.c_str() + r;
          r += x.meta.instance_name.size() + 1;
          x.meta.clock = d.c_str() + r;
          r += x.meta.clock.size() + 1 + 4;  // + page size
          uint32_t cpus = Get<uint32_t>(d, r);
          r += 4;
          x.cpu_pages.resize(cpus);
          for (uint32_t i = 0; i < cpus; ++i, r += 20) {
            uint32_t cpu = Get<uint32_t>(d, r);
            uint64_t coff = Get<uint64_t>(d, r + 4);
            uint32_t chunks = Get<uint32_t>(f, coff);
            for (uint64_t c = coff + 4; chunks-- > 0;) {
              uint32_t cs = Get<uint32_t>(f, c), us = Get<uint32_t>(f, c + 4);
              x.cpu_pages[cpu] += Unzstd(f, c + 8, cs, us);
              c += 8 + cs;
            }
          }
          break;
        }
        case kOptHeaderInfo: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          uint64_t n = Get<uint64_t>(b, 12);
          x.meta.header_page = b.substr(20, n);
          size_t r = 20 + n + 13;
          x.meta.header_event = b.substr(r + 8, Get<uint64_t>(b, r));
          break;
        }
        case kOptFtraceEvents: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          size_t r = 4;
          for (uint32_t n = Get<uint32_t>(b, 0); n-- > 0;) {
            uint64_t sz = Get<uint64_t>(b, r);
            x.meta.ftrace_formats.push_back(b.substr(r + 8, sz));
            r += 8 + sz;
          }
          break;
        }
        case kOptEventFormats: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          size_t r = 4;
          for (uint32_t s = Get<uint32_t>(b, 0); s-- > 0;) {
            TraceDatSystem sys;
            sys.name = b.c_str() + r;
            r += sys.name.size() + 1;
            uint32_t n = Get<uint32_t>(b, r);
            r += 4;
            for (uint32_t k = 0; k < n; ++k) {
              uint64_t sz = Get<uint64_t>(b, r);
              sys.formats.push_back(b.substr(r + 8, sz));
              r += 8 + sz;
            }
            x.meta.systems.push_back(std::move(sys));
          }
          break;
        }
        case kOptKallsyms: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          x.meta.kallsyms = b.substr(4, Get<uint32_t>(b, 0));
          break;
        }
        case kOptPrintk: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          x.meta.printk_formats = b.substr(4, Get<uint32_t>(b, 0));
          break;
        }
        case kOptCmdlines: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          x.meta.cmdlines = b.substr(8, Get<uint64_t>(b, 0));
          break;
        }
        default: break;
      }
    }
  }
  return x;
}

std::string RunShell(const std::string& cmd) { return testing::ReadCommand(cmd); }

class TraceDatWriterTest : public ::testing::Test {
 protected:
  std::string out_ = (std::filesystem::temp_directory_path() /
                      ("exitscope-writer-" + std::to_string(::getpid()) + ".dat"))
                         .string();
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
                           << std::mismatch(got.begin(), got.end(), want.begin(), want.end()).first -
                                  got.begin();
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
