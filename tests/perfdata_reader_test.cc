// perf.data reader on real recordings: per-event sample counts, time order, thread names and header
// features, checked against what perf itself reported for the same files (dual-5000/README.md,
// `perf report --stats`, `perf report --header-only`).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <random>
#include <map>
#include <string>
#include <vector>

#include "sources/mapped_file.h"
#include "sources/perfdata/perfdata_reader.h"
#include "sources/perfdata/perfdata_stream.h"
#include "test_util.h"

namespace exitscope {
namespace {

const std::string kNested = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/";

// Event name per tracepoint id, from the attrs (config = tracepoint id) and HEADER_EVENT_DESC.
std::map<uint16_t, std::string> NamesById(const PerfDataFile& f) {
  std::map<uint16_t, std::string> out;
  for (const auto& a : f.attrs()) out[static_cast<uint16_t>(a.config)] = a.name;
  return out;
}

TEST(PerfDataReader, Dual5000CountsMatchPerf) {
  Diagnostics diag;
  auto f = PerfDataFile::Open(kNested + "dual-5000/perf.data", &diag);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_FALSE((*f)->pipe_mode());
  EXPECT_EQ((*f)->stats().samples, 375873u);  // perf report --stats: SAMPLE events
  EXPECT_EQ((*f)->stats().finished_rounds, 17u);
  EXPECT_FALSE((*f)->tracing_data().empty());
  auto names = NamesById(**f);
  PerfSampleStream stream(f->get(), &diag);
  PerfTimedSample s;
  std::map<std::string, uint64_t> by_name;
  uint64_t n = 0, prev_ts = 0, backwards = 0;
  while (stream.Next(&s, nullptr)) {
    uint16_t id = static_cast<uint16_t>(s.raw[0] | s.raw[1] << 8);
    ++by_name[names[id]];
    if (s.ts_ns < prev_ts) ++backwards;
    prev_ts = s.ts_ns;
    ++n;
  }
  EXPECT_EQ(n, 375873u);
  EXPECT_EQ(backwards, 0u);
  // `perf script | grep -c` per event (dual-5000/counts.txt, perf.data column).
  EXPECT_EQ(by_name["kvm:kvm_exit"], 65368u);
  EXPECT_EQ(by_name["kvm:kvm_entry"], 65368u);
  EXPECT_EQ(by_name["kvm:kvm_write_tsc_offset"], 50132u);
  EXPECT_EQ(by_name["kvm:kvm_userspace_exit"], 25000u);
  EXPECT_EQ(by_name["kvm:kvm_page_fault"], 10001u);
  EXPECT_EQ(by_name["kvm:kvm_apicv_inhibit_changed"], 2u);
  EXPECT_FALSE(diag.HasDataLoss());
}

TEST(PerfDataReader, HeaderFeaturesFillTraceMeta) {
  Diagnostics diag;
  auto f = PerfDataFile::Open(kNested + "dual-5000/perf.data", &diag);
  ASSERT_TRUE(f.ok());
  const TraceMeta& m = (*f)->meta();
  // perf report --header-only of the same file.
  EXPECT_EQ(m.kernel, "6.1.0-57-amd64");
  EXPECT_EQ(m.arch, "x86_64");
  EXPECT_EQ(m.cpu_count, 2);
  EXPECT_EQ(m.isa_hint, Isa::kSvm);  // cpuid : AuthenticAMD,15,107,1
  EXPECT_NE(m.cpu_description.find("QEMU Virtual CPU"), std::string::npos);
  EXPECT_NE(m.record_command.find("perf record -e kvm:* -a"), std::string::npos);
  ASSERT_TRUE(m.comm_by_tid.count(506));
  EXPECT_EQ(m.comm_by_tid.at(506), "kvmprobe");
  EXPECT_EQ((*f)->attrs().size(), 92u);
  EXPECT_EQ((*f)->attrs()[0].name, "kvm:kvm_entry");
}

TEST(PerfDataReader, RejectsNonPerfInput) {
  Diagnostics diag;
  auto f = PerfDataFile::Open(kNested + "dual-5000/trace.dat", &diag);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().tag, "perfdata.bad-magic");
}

}  // namespace
}  // namespace exitscope

namespace exitscope {
namespace {

// Pipe mode (`perf record -o -`): attrs, features and tracing data arrive as records in the stream.
// Oracle: `perf script` of the same file, one line per sample, kept next to it.
TEST(PerfDataReader, PipeModeMatchesPerfScript) {
  const std::string dir = EXITSCOPE_TESTDATA_DIR;
  Diagnostics diag;
  auto f = PerfDataFile::Open(dir + "/sched-pipe.perf.data", &diag);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_TRUE((*f)->pipe_mode());
  // Two tracepoints plus the dummy event perf adds for side-band records in system-wide mode.
  int tracepoints = 0;
  for (const auto& a : (*f)->attrs()) tracepoints += a.name.starts_with("sched:");
  EXPECT_EQ(tracepoints, 2);
  EXPECT_FALSE((*f)->tracing_data().empty());
  // Expected: per event name and per (tid → comm), counted from perf script's text.
  std::ifstream script(dir + "/sched-pipe.perf-script.txt");
  std::map<std::string, uint64_t> want;
  std::map<int32_t, std::string> want_comm;
  for (std::string line; std::getline(script, line);) {
    size_t br = line.find(" [");
    size_t colon = line.find(": ", br);
    size_t name_end = line.find(": ", colon + 2);
    ASSERT_NE(name_end, std::string::npos) << line;
    std::string name = line.substr(colon + 2, name_end - colon - 2);
    name = name.substr(name.find_first_not_of(' '));
    ++want[name];
    std::string left = line.substr(0, br);
    left = left.substr(0, left.find_last_not_of(' ') + 1);
    size_t sp = left.find_last_of(' ');
    std::string comm = left.substr(0, sp);
    comm = comm.substr(comm.find_first_not_of(' '));
    want_comm[std::stoi(left.substr(sp + 1))] = comm.substr(0, comm.find_last_not_of(' ') + 1);
  }
  std::map<uint16_t, std::string> names;
  for (const auto& a : (*f)->attrs()) names[static_cast<uint16_t>(a.config)] = a.name;
  PerfSampleStream stream(f->get(), &diag);
  PerfTimedSample s;
  std::map<std::string, uint64_t> got;
  uint64_t prev_ts = 0;
  while (stream.Next(&s, nullptr)) {
    ++got[names[static_cast<uint16_t>(s.raw[0] | s.raw[1] << 8)]];
    EXPECT_GE(s.ts_ns, prev_ts);
    prev_ts = s.ts_ns;
  }
  EXPECT_EQ(got, want);
  // Threads that perf names with a COMM record must carry the same name in TraceMeta.
  int checked = 0;
  for (const auto& [tid, comm] : want_comm) {
    auto it = (*f)->meta().comm_by_tid.find(tid);
    if (it == (*f)->meta().comm_by_tid.end() || tid == 0) continue;
    EXPECT_EQ(it->second, comm) << "tid " << tid;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// Every sample and loss marker the time-ordered stream hands out, as text.
std::vector<std::string> StreamOf(const PerfDataFile& f) {
  Diagnostics diag;
  PerfSampleStream stream(&f, &diag);
  PerfTimedSample s;
  LostEvents lost;
  std::vector<std::string> out;
  while (stream.Next(&s, &lost)) {
    std::string line = std::to_string(s.ts_ns) + " " + std::to_string(s.cpu) + " " + std::to_string(s.tid) + " ";
    line.append(reinterpret_cast<const char*>(s.raw.data()), s.raw.size());
    if (lost.cpu >= 0) line += " lost " + std::to_string(lost.cpu) + " " + std::to_string(lost.count);
    lost = LostEvents{};
    out.push_back(std::move(line));
  }
  return out;
}

// A perf.data file's records are read with pread into a window that keeps the rounds not handed
// out (on this kind of VM each page of a mapping cost ~2 us on first access, prefaulted or not:
// `dump` of a 1 GB perf.data spent ~0.5 s on it), and hand out what the same bytes read in place
// do (a view of memory, as pipe input and the fuzzers are read), on real recordings (dual-5000: 17
// rounds, the largest 8.4 MB, so the window drops and moves bytes) and on files with loss records.
TEST(PerfDataReader, FileIsReadWithPreadAsInPlace) {
  const std::string seeds = std::string(EXITSCOPE_TESTDATA_DIR) + "/../../fuzz/corpus/perfdata_rounds/";
  for (const std::string& path :
       {kNested + "dual-5000/perf.data", kNested + "kvmprobe-200.perf.data",
        std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-arm64-6.1/perf.data",
        seeds + "dual-5000-40rec-rounds4-late.perf.data", seeds + "kvmprobe-200-60rec-rounds5-late.perf.data"}) {
    Diagnostics diag_file, diag_view;
    auto file = PerfDataFile::Open(path, &diag_file);
    ASSERT_TRUE(file.ok()) << path << ": " << file.error().message;
    const std::string bytes = testing::ReadFile(path);
    auto view = PerfDataFile::Open(
        MappedFile::View({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, path), &diag_view);
    ASSERT_TRUE(view.ok()) << path << ": " << view.error().message;
    const uint64_t before = testing::ProcSelfIo("rchar");
    const std::vector<std::string> read = StreamOf(**file);
    const uint64_t read_bytes = testing::ProcSelfIo("rchar") - before;
    const std::vector<std::string> in_place = StreamOf(**view);
    EXPECT_GT(read.size(), 30u) << path;
    EXPECT_TRUE(read == in_place) << path << ": " << read.size() << " vs " << in_place.size() << " samples";
    EXPECT_GE(read_bytes, (*file)->records_end()) << path << ": records not read with pread";
  }
}

// The inline sample parser against ParseSample on every sample of the real recordings (file mode
// with perf's dummy event beside the tracepoints, whose sample_type differs: the id table path;
// pipe mode; arm64), and on the same records with one byte of each sample's first 64 changed: an
// id, time, CPU, period or RAW size that no longer fits must fall back to ParseSample, not differ.
TEST(PerfDataReader, InlineSampleParseAgreesWithParseSample) {
  const std::vector<std::string> files = {kNested + "dual-5000/perf.data", kNested + "kvmprobe-200.perf.data",
                                          std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-arm64-6.1/perf.data",
                                          std::string(EXITSCOPE_TESTDATA_DIR) + "/sched-pipe.perf.data"};
  std::mt19937 rng(7);
  for (const std::string& path : files) {
    SCOPED_TRACE(path);
    std::ifstream in(path, std::ios::binary);
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    Diagnostics diag;
    auto f = PerfDataFile::Open(MappedFile::View(bytes, path), &diag);
    ASSERT_TRUE(f.ok()) << f.error().message;
    uint64_t fast = 0;
    EXPECT_EQ((*f)->FirstFastParseMismatch(&fast), -1);
    EXPECT_GT(fast, (*f)->stats().samples / 2);  // the fast path answers for most samples
    // One byte changed in each sample body's first 64 (the header walk stays intact).
    std::vector<uint8_t> changed = bytes;
    const uint64_t base = (*f)->data_offset();
    auto data = (*f)->data();
    for (uint64_t pos = 0; pos + 8 <= (*f)->records_end();) {
      const auto [type, size] = PerfDataFile::RecordHeaderAt(data.data() + pos);
      if (size < 8) break;
      if (type == 9 && size > 8) {  // PERF_RECORD_SAMPLE
        const uint64_t at = base + pos + 8 + rng() % std::min<uint64_t>(64, size - 8u);
        changed[at] = static_cast<uint8_t>(rng() % 4 == 0 ? changed[at] ^ 0xff : rng());
      }
      pos += size;
    }
    Diagnostics diag2;
    auto g = PerfDataFile::Open(MappedFile::View(changed, path), &diag2);
    ASSERT_TRUE(g.ok()) << g.error().message;
    EXPECT_EQ((*g)->FirstFastParseMismatch(&fast), -1);
    EXPECT_GT(fast, 0u);
  }
}

}  // namespace
}  // namespace exitscope
