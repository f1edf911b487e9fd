// Text dialects on real captures and on damaged input: counts by reason against an independent
// count of the file's own text, garbage and truncation counted and flagged, never a crash.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "decode/exit_reasons.h"
#include "model/event_source.h"
#include "sources/text/text_line_parser.h"
#include "sources/text/text_line_reader.h"
#include "pipeline/input_detector.h"
#include "test_util.h"

namespace exitscope {
namespace {

const std::string kShared = EXITSCOPE_SHARED_DIR;

struct TextRun {
  std::map<std::string, uint64_t> exits_by_reason;
  uint64_t events = 0;
  Diagnostics diag;
  TraceMeta meta;
};

TextRun ReadAll(const std::string& path) {
  TextRun r;
  auto src = OpenKvmEventSource(path);
  EXPECT_TRUE(src.ok()) << (src.ok() ? "" : src.error().message);
  if (!src.ok()) return r;
  KvmEvent e;
  while ((*src)->Next(&e, nullptr)) {
    ++r.events;
    if (e.kind == EventKind::kExit) ++r.exits_by_reason[ExitReasonName(e.isa, e.reason)];
  }
  r.diag = (*src)->diagnostics();
  r.meta = (*src)->meta();
  return r;
}

std::string TempPath(const std::string& name) {
  return (::testing::TempDir().empty() ? std::string("/tmp/") : ::testing::TempDir()) + "exitscope_" + name;
}

// hip24-vmx/report-text-vapic.txt: 1,333 kvm_exit lines of libtraceevent's kvm plugin (VMX names).
TEST(TextReader, Hip24ReportTextByReason) {
  const std::string path = kShared + "/traces/hip24-vmx/report-text-vapic.txt";
  // Independent count: the word after "reason " on each kvm_exit line.
  std::ifstream in(path);
  std::map<std::string, uint64_t> want;
  uint64_t total = 0;
  for (std::string line; std::getline(in, line);) {
    size_t r = line.find("kvm_exit:");
    if (r == std::string::npos) continue;
    size_t w = line.find("reason ", r) + 7;
    ++want[line.substr(w, line.find(' ', w) - w)];
    ++total;
  }
  ASSERT_EQ(total, 1333u);  // README: 1,333 lines
  TextRun got = ReadAll(path);
  EXPECT_EQ(got.exits_by_reason, want);
  EXPECT_EQ(got.meta.isa_hint, Isa::kVmx);
  EXPECT_EQ(got.diag.Count("text.unparsed_line"), 0u);
  EXPECT_EQ(got.diag.Count("text.bad_kvm_line"), 0u);
  EXPECT_EQ(got.meta.source_format, "text: trace-cmd report");
}

// The first n lines of a gzip text as a string.
std::string HeadOf(const std::string& gz, int n) {
  auto r = TextLineReader::Open(gz);
  EXPECT_TRUE(r.ok());
  std::string out;
  std::string_view line;
  for (int i = 0; i < n && (*r)->NextLine(&line); ++i) out.append(line).push_back('\n');
  return out;
}

// Every line of a file as a reader hands them out, with whether the last was cut short.
std::vector<std::string> LinesOf(std::unique_ptr<TextLineReader> r, bool* cut) {
  std::vector<std::string> out;
  std::string_view line;
  while (r->NextLine(&line)) out.emplace_back(line);
  *cut = r->unterminated();
  return out;
}

// A file is read in 1 MiB chunks (a regular file with pread, a view copied): its lines are the
// text's lines, split here at each newline, across chunk ends (lines of many lengths, 3 MB of them),
// and a last line without its newline.
TEST(TextReader, ChunkedReadsGiveTheTextsLines) {
  std::string text;
  for (int i = 0; text.size() < (3u << 20) + 12345; ++i) text += std::string(1 + (i * 7919) % 300, 'a' + i % 26) + "\n";
  text += "the last line, cut";
  std::vector<std::string> want;
  for (size_t from = 0; from < text.size();) {
    size_t nl = text.find('\n', from);
    if (nl == std::string::npos) nl = text.size();
    want.push_back(text.substr(from, nl - from));
    from = nl + 1;
  }
  const std::string path = TempPath("chunks.txt");
  std::ofstream(path, std::ios::binary) << text;
  auto file = TextLineReader::Open(path);
  ASSERT_TRUE(file.ok());
  std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(text.data()), text.size());
  auto view = TextLineReader::Open(MappedFile::View(bytes, "view"));
  ASSERT_TRUE(view.ok());
  bool file_cut = false, view_cut = false;
  const auto from_file = LinesOf(std::move(file.value()), &file_cut);
  const auto from_view = LinesOf(std::move(view.value()), &view_cut);
  ASSERT_GT(want.size(), 20000u);
  EXPECT_TRUE(from_file == want) << from_file.size() << " lines from the file, " << want.size() << " in the text";
  EXPECT_TRUE(from_view == want) << from_view.size() << " lines from the view, " << want.size() << " in the text";
  EXPECT_TRUE(file_cut);
  EXPECT_TRUE(view_cut);
  std::remove(path.c_str());
}

TEST(TextReader, MicrosecondTimestampsAreCounted) {
  const std::string us = HeadOf(kShared + "/traces/nested-svm-6.1/dual-5000/trace-cmd-report.txt.gz", 1001);
  const std::string us_path = TempPath("us.txt"), ns_path = TempPath("ns.txt");
  std::ofstream(us_path) << us;
  // "   14.625324: " -> "   14.625324123: "
  std::ofstream(ns_path) << std::regex_replace(us, std::regex(R"((\] +\d+\.\d{6})(:))"),
                                               "$01123$02");  // $01: group 1, then the digits
  TextRun coarse = ReadAll(us_path), fine = ReadAll(ns_path);
  EXPECT_EQ(coarse.diag.Count("text.coarse_timestamps"), 1000u);  // the 1,001 lines' first is "cpus=2"
  EXPECT_EQ(fine.diag.Count("text.coarse_timestamps"), 0u);
  EXPECT_EQ(fine.events, coarse.events);
  EXPECT_GT(coarse.events, 500u);
  std::remove(us_path.c_str());
  std::remove(ns_path.c_str());
}

// `trace-cmd report` of the same trace.dat with -l (latency format: the CPU glued to its flags) and
// --ts-diff ("(+206)" after the time) reads as the plain report does: every exit, the same times.
// -R prints raw fields in bases the text does not give: counted as such (not as damage), and the
// report says no exit could be read rather than that none was recorded.
TEST(TextReader, TraceCmdReportVariants) {
  const std::string dat = kShared + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat";
  std::map<std::string, TextRun> runs;
  for (const std::string opt : {"", "-l", "--ts-diff", "-R"}) {
    const std::string path = TempPath("variant" + opt + ".txt");
    ASSERT_EQ(testing::RunCommand("trace-cmd report " + opt + " -i " + dat + " > " + path + " 2>/dev/null").status, 0);
    runs[opt] = ReadAll(path);
    if (opt == "-R") {
      auto r = testing::RunCommand(std::string(EXITSCOPE_BINARY) + " report " + path);
      EXPECT_EQ(r.status, 65);
      EXPECT_NE(r.out.find("no kvm_exit event could be read"), std::string::npos) << r.out;
      EXPECT_EQ(r.out.find("no kvm_exit events in this trace"), std::string::npos) << r.out;
    }
    std::remove(path.c_str());
  }
  const TextRun& plain = runs[""];
  ASSERT_EQ(plain.exits_by_reason.at("npf"), 401u);  // kvmprobe-200: README
  for (const std::string opt : {"-l", "--ts-diff"}) {
    EXPECT_EQ(runs[opt].exits_by_reason, plain.exits_by_reason) << opt;
    EXPECT_EQ(runs[opt].events, plain.events) << opt;
    EXPECT_EQ(runs[opt].meta.first_ts_ns, plain.meta.first_ts_ns) << opt;
    EXPECT_EQ(runs[opt].meta.last_ts_ns, plain.meta.last_ts_ns) << opt;
    EXPECT_EQ(runs[opt].diag.Count("text.unparsed_line"), 0u) << opt;
    EXPECT_EQ(runs[opt].meta.cpu_count, plain.meta.cpu_count) << opt;
  }
  EXPECT_EQ(runs["-R"].events, 0u);
  EXPECT_GT(runs["-R"].diag.Count("text.raw_fields"), 5000u);
  EXPECT_EQ(runs["-R"].diag.Count("text.bad_kvm_line"), 0u);
}

TEST(TextReader, GarbageLinesAreSkippedCountedAndFlagged) {
  const std::string src = kShared + "/traces/nested-svm-6.1/dual-5000/trace-cmd-report.txt.gz";
  std::string clean = HeadOf(src, 2001);
  std::string path = TempPath("clean.txt");
  std::ofstream(path) << clean;
  TextRun base = ReadAll(path);
  ASSERT_GT(base.events, 500u);
  EXPECT_FALSE(base.diag.HasDataLoss());
  // Interleave garbage: binary junk, a cut line, an unknown reason, random prose.
  std::istringstream lines(clean);
  std::string mixed;
  int n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    mixed += line + "\n";
    if (n % 100 == 50) {
      mixed += std::string("\x01\x02\xff garbage \x00 bytes", 20) + "\n";
      mixed += line.substr(0, line.size() / 3) + "\n";
      mixed += "hello world, this is not a trace\n";
    }
  }
  // Stamped as the last clean line: a line far later would be skipped as a damaged timestamp.
  std::string last_line = clean.substr(clean.rfind('\n', clean.size() - 2) + 1);
  size_t ts_end = last_line.find(": ");
  size_t ts_begin = last_line.rfind(' ', ts_end) + 1;
  ASSERT_NE(ts_end, std::string::npos);
  std::string ts = last_line.substr(ts_begin, ts_end - ts_begin);
  mixed += "   kvmprobe-506   [001]    " + ts + ": kvm_exit:  reason EXIT_NO_SUCH_THING rip 0x1 info 0 0\n";
  mixed += "   kvmprobe-506   [001]    " + ts.substr(0, ts.size() - 2);  // cut mid-line, no newline
  std::string mpath = TempPath("mixed.txt");
  std::ofstream(mpath, std::ios::binary) << mixed;
  TextRun got = ReadAll(mpath);
  EXPECT_EQ(got.exits_by_reason, base.exits_by_reason);
  EXPECT_EQ(got.events, base.events);
  EXPECT_TRUE(got.diag.HasDataLoss());
  EXPECT_GT(got.diag.Count("text.unparsed_line") + got.diag.Count("text.bad_kvm_line"), 40u);
  EXPECT_EQ(got.diag.Count("text.unknown_exit_reason"), 1u);
}

TEST(TextReader, TruncatedGzipYieldsPartialResult) {
  const std::string src = kShared + "/traces/nested-svm-6.1/dual-5000/perf-script.txt.gz";
  std::ifstream in(src, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string path = TempPath("cut.txt.gz");
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 3);
  TextRun got = ReadAll(path);
  EXPECT_GT(got.events, 10000u);
  EXPECT_LT(got.events, 265737u);
  EXPECT_EQ(got.diag.Count("text.truncated_gzip"), 1u);
  EXPECT_TRUE(got.diag.HasDataLoss());
}

TEST(TextReader, TruncatedPerfDataIsARefusalWithHintNotACrash) {
  const std::string src = kShared + "/traces/nested-svm-6.1/kvmprobe-200.perf.data";
  std::ifstream in(src, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // Cut: the tracing data (a feature section after the data) is gone with the tail.
  std::string path = TempPath("cut.perf.data");
  std::ofstream(path, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  auto s = OpenKvmEventSource(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().tag, "perfdata.no-tracing-data");
  EXPECT_FALSE(s.error().hint.empty());
  // Damaged record sizes in the middle of the data: the records before are read, the rest counted.
  std::string damaged = bytes;
  for (size_t i = damaged.size() / 2; i < damaged.size() / 2 + 4096; ++i) damaged[i] = 0;
  std::string dpath = TempPath("damaged.perf.data");
  std::ofstream(dpath, std::ios::binary) << damaged;
  auto d = OpenKvmEventSource(dpath);
  ASSERT_TRUE(d.ok()) << d.error().message;
  KvmEvent e;
  uint64_t n = 0;
  while ((*d)->Next(&e, nullptr)) ++n;
  EXPECT_GT(n, 0u);
  EXPECT_TRUE((*d)->diagnostics().HasDataLoss());
}

// VMX exit-reason flags (bits 31:16) survive every text dialect: the kernel's TP_printk names
// FAILED_VMENTRY and prints other flag bits as one hex word; libtraceevent's kvm plugin prints a
// flagged reason as "UNKNOWN (<decimal>)". A failed entry must not read as a normal exit.
TEST(TextReader, VmxExitReasonFlagsAreKept) {
  const std::string kernel = TempPath("flags-kernel.txt");
  ASSERT_TRUE(testing::WriteFile(
      kernel,
      "qemu-7003 [002] d..1. 5.000000001: kvm_exit: vcpu 0 reason HLT rip 0x1000 info1 0x0000000000000000 "
      "info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000\n"
      "qemu-7003 [002] d..1. 5.000000002: kvm_exit: vcpu 0 reason INVALID_STATE FAILED_VMENTRY rip 0x1000 "
      "info1 0x0000000000000000 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000\n"
      "qemu-7003 [002] d..1. 5.000000003: kvm_exit: vcpu 0 reason EPT_VIOLATION 0x8000000 rip 0x1000 "
      "info1 0x0000000000000181 info2 0x0000000000000000 intr_info 0x00000000 error_code 0x00000000\n"));
  TextRun k = ReadAll(kernel);
  EXPECT_EQ(k.exits_by_reason["HLT"], 1u);
  EXPECT_EQ(k.exits_by_reason["INVALID_STATE FAILED_VMENTRY"], 1u);
  EXPECT_EQ(k.exits_by_reason["EPT_VIOLATION 0x8000000"], 1u);
  EXPECT_EQ(k.exits_by_reason.size(), 3u);

  const std::string plugin = TempPath("flags-plugin.txt");
  // 2147483681 = 0x80000021: INVALID_STATE (33) | FAILED_VMENTRY, as plugin_kvm.c prints it. The
  // first line alone tells the ISA (a known VMX basic reason under the flag).
  ASSERT_TRUE(testing::WriteFile(
      plugin,
      "qemu-7003 [002]  5.000000001: kvm_exit:             reason UNKNOWN (2147483681) rip 0x1000 info 0 0\n"
      "qemu-7003 [002]  5.000000002: kvm_exit:             reason HLT rip 0x1000 info 0 0\n"));
  TextRun p = ReadAll(plugin);
  EXPECT_EQ(p.exits_by_reason["INVALID_STATE FAILED_VMENTRY"], 1u);
  EXPECT_EQ(p.exits_by_reason["HLT"], 1u);
  EXPECT_EQ(p.diag.Count("text.unknown_exit_reason"), 0u);
  std::remove(kernel.c_str());
  std::remove(plugin.c_str());
}

}  // namespace
}  // namespace exitscope
