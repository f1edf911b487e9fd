// The timeline's Chrome-trace writer: each exit is one JSON event whose name, times, VMM exit and
// detail texts read back as the decoders name them (the writer quotes names once and plain text
// without a json value: the file must still parse, and say the same).
#include <gtest/gtest.h>

#include <stdio.h>  // fopencookie

#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "analysis/exit_bins.h"
#include "decode/exit_reasons.h"
#include "decode/msr_names.h"
#include "sinks/chrome_trace_writer.h"
#include "test_util.h"

namespace exitscope {
namespace {

constexpr uint32_t kSvmExitMsr = 0x7c;  // arch/x86/include/uapi/asm/svm.h SVM_EXIT_MSR
constexpr uint32_t kSvmExitHlt = 0x78;  // SVM_EXIT_HLT
constexpr uint32_t kKvmExitMmio = 6;    // include/uapi/linux/kvm.h KVM_EXIT_MMIO
constexpr uint32_t kMsrTscDeadline = 0x6e0;

nlohmann::json WriteAndParse(const std::vector<std::pair<ExitSample, bool>>& exits) {
  TraceMeta meta;
  meta.isa_hint = Isa::kSvm;
  ExitBinner bins(meta);
  bins.SetOrigin(1'000'000'000);
  std::FILE* out = std::tmpfile();
  EXPECT_NE(out, nullptr);
  ChromeTraceWriter writer(out, meta, bins, 0);
  for (const auto& [s, timed] : exits) {
    bins.OnExitSample(s);
    timed ? writer.OnExitSample(s) : writer.OnUntimedExit(s);
  }
  EXPECT_TRUE(writer.Finish(Report{}));
  std::fflush(out);
  std::rewind(out);
  std::string text;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, out)) > 0;) text.append(buf, n);
  std::fclose(out);
  return nlohmann::json::parse(text);  // throws (fails the test) on a malformed file
}

TEST(ChromeTraceWriter, ExitEventsReadBackAsTheDecodersNameThem) {
  ExitSample msr = testing::MakeExitSample(42, Isa::kSvm, kSvmExitMsr, 2'500, 1'000'123'456);
  msr.rip = 0xffffffff81000010;
  msr.to_userspace = true;
  msr.userspace_reason = kKvmExitMmio;
  msr.detail_count = 1;
  msr.details[0].kind = EventKind::kMsr;
  msr.details[0].key = kMsrTscDeadline;
  msr.details[0].write = true;
  ExitSample hlt = msr;
  hlt.isa = Isa::kUnknown;  // the trace's ISA names it
  hlt.reason = kSvmExitHlt;
  hlt.ts_ns = 1'002'000'001;
  hlt.to_userspace = false;
  hlt.detail_count = 0;

  const nlohmann::json doc = WriteAndParse({{msr, true}, {hlt, false}, {msr, true}});
  std::vector<nlohmann::json> exits;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.value("cat", "") == "exit" || e.value("cat", "") == "untimed_exit") exits.push_back(e);
  }
  ASSERT_EQ(exits.size(), 3u);
  for (size_t i : {0u, 2u}) {  // the second MSR exit gets the names quoted the first time
    const auto& x = exits[i];
    EXPECT_EQ(x.at("ph"), "X");
    EXPECT_EQ(x.at("name"), ExitReasonName(Isa::kSvm, kSvmExitMsr));
    EXPECT_EQ(x.at("tid"), 42);
    EXPECT_DOUBLE_EQ(x.at("ts").get<double>(), 123.456);
    EXPECT_DOUBLE_EQ(x.at("dur").get<double>(), 2.5);
    EXPECT_EQ(x.at("args").at("to_vmm"), KvmExitName(kKvmExitMmio));
    EXPECT_EQ(x.at("args").at("rip"), "0xffffffff81000010");
    ASSERT_EQ(x.at("args").at("details").size(), 1u);
    EXPECT_EQ(x.at("args").at("details")[0], "msr 0x6e0 " + MsrName(kMsrTscDeadline) + " write");
  }
  EXPECT_EQ(exits[1].at("ph"), "i");
  EXPECT_EQ(exits[1].at("name"), ExitReasonName(Isa::kSvm, kSvmExitHlt));
  EXPECT_DOUBLE_EQ(exits[1].at("ts").get<double>(), 2000.001);
  EXPECT_FALSE(exits[1].at("args").contains("to_vmm"));
}

// Every detail kind's text, as the report's breakdowns name it (written piece by piece, not through
// a format string: the spacing and number bases are checked here).
TEST(ChromeTraceWriter, DetailTextsOfEveryKind) {
  ExitSample s = testing::MakeExitSample(7, Isa::kSvm, kSvmExitMsr, 1'000'001, 1'000'000'999);
  auto detail = [](EventKind kind, uint64_t key, bool write, uint32_t size, uint32_t aux = 0, bool failed = false) {
    ExitDetail d;
    d.kind = kind, d.key = key, d.write = write, d.size = size, d.aux = aux, d.failed = failed;
    return d;
  };
  const std::vector<std::pair<ExitDetail, std::string>> cases = {
      {detail(EventKind::kMsr, 0x10, false, 0, 0, true), "msr 0x10 " + MsrName(0x10) + " read #GP"},
      {detail(EventKind::kPio, 0x3f8, true, 1), "pio 0x3f8 " + IoPortName(0x3f8) + " out size 1"},
      {detail(EventKind::kPio, 0xcfc, false, 4), "pio 0xcfc " + IoPortName(0xcfc) + " in size 4"},
      {detail(EventKind::kMmio, 0xfee00000, true, 4, 1), "mmio 0xfee00000 " + std::string(MmioTypeName(1)) + " size 4"},
      {detail(EventKind::kFastMmio, 0xfe003000, true, 0), "fast_mmio 0xfe003000"},
      {detail(EventKind::kCr, 0, true, 4), "cr " + CrName(4) + " write"},
      {detail(EventKind::kHypercall, 5, false, 0), "hypercall 5 " + std::string(HypercallName(5))},
      {detail(EventKind::kUserspaceExit, kKvmExitMmio, false, 0), "userspace " + KvmExitName(kKvmExitMmio)},
      {detail(EventKind::kPageFault, 0x7f0000001000, false, 0), "page_fault 0x7f0000001000"},
  };
  std::vector<std::pair<ExitSample, bool>> exits;
  for (const auto& [d, text] : cases) {
    s.detail_count = 1;
    s.details[0] = d;
    exits.push_back({s, true});
  }
  const nlohmann::json doc = WriteAndParse(exits);
  size_t i = 0;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.value("cat", "") != "exit") continue;
    ASSERT_LT(i, cases.size());
    EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), 0.999);
    EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 1000.001);
    EXPECT_EQ(e.at("args").at("details"), nlohmann::json::array({cases[i].second})) << i;
    ++i;
  }
  EXPECT_EQ(i, cases.size());
}

// The exits go out in pieces of ~1 MB, not through the FILE's own few-KB buffer (a write(2) per
// 16 exits, 30,000 for the default cap's 125 MB), and the pieces still make one whole file; the
// same file when a thread of its own formats the exits, batch by batch.
TEST(ChromeTraceWriter, WritesInLargePiecesThatMakeOneFile) {
  struct Sink {
    std::string bytes;
    size_t writes = 0;
  };
  cookie_io_functions_t io{};
  io.write = [](void* cookie, const char* buf, size_t size) -> ssize_t {
    auto* s = static_cast<Sink*>(cookie);
    s->bytes.append(buf, size);
    ++s->writes;
    return static_cast<ssize_t>(size);
  };
  TraceMeta meta;
  meta.isa_hint = Isa::kSvm;
  constexpr int kExits = 20'001;  // not a whole number of batches
  auto write = [&](unsigned format_threads) {
    Sink sink;
    std::FILE* out = fopencookie(&sink, "w", io);
    EXPECT_NE(out, nullptr);
    ExitBinner bins(meta);
    bins.SetOrigin(1'000'000'000);
    {
      ChromeTraceWriter writer(out, meta, bins, 0, format_threads);
      for (int i = 0; i < kExits; ++i) {
        ExitSample s = testing::MakeExitSample(42 + i % 3, Isa::kSvm, i % 5 ? kSvmExitHlt : kSvmExitMsr, 1'000 + i,
                                               1'000'000'000 + 2'000ull * i);
        bins.OnExitSample(s);
        i % 7 ? writer.OnExitSample(s) : writer.OnUntimedExit(s);
      }
      EXPECT_TRUE(writer.Finish(Report{}));
    }
    std::fclose(out);
    return sink;
  };
  const Sink one = write(0);
  ASSERT_GT(one.bytes.size(), 2u << 20);  // a few MB: pieces of 4-8 KB would be hundreds of writes
  EXPECT_LE(one.writes, (one.bytes.size() >> 18) + 8) << one.bytes.size() << " bytes";  // 256 KB or more a write
  const nlohmann::json doc = nlohmann::json::parse(one.bytes);
  int exits = 0, untimed = 0;
  for (const auto& e : doc.at("traceEvents")) {
    exits += e.value("cat", "") == "exit";
    untimed += e.value("cat", "") == "untimed_exit";
  }
  EXPECT_EQ(exits + untimed, kExits);
  EXPECT_EQ(untimed, (kExits + 6) / 7);
  EXPECT_EQ(doc.at("otherData").at("exitscope").at("exits_written"), kExits);
  const Sink threaded = write(1);
  EXPECT_EQ(threaded.bytes, one.bytes);
  EXPECT_LE(threaded.writes, (threaded.bytes.size() >> 18) + 8);
}

}  // namespace
}  // namespace exitscope
