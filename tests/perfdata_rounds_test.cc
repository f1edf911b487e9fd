// The parallel perf.data reader (rounds decoded on several threads) against the sequential one on
// the real recordings: every event, loss marker, diagnostic and the time span must be the same,
// whether each round is a chunk or chunks are the default size, through Next and NextBatch. And a
// file whose records arrive a round late, with loss records, must come out as the sequential
// reader has it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "decode/kvm_decoder.h"
#include "model/event_source.h"
#include "pipeline/input_detector.h"
#include "pipeline/perfdata_rounds.h"
#include "sources/perfdata/perfdata_reader.h"
#include "sources/perfdata/perfdata_source.h"
#include "test_util.h"

namespace exitscope {
namespace {

namespace fs = std::filesystem;

const std::string kShared = EXITSCOPE_SHARED_DIR;
const fs::path kSeeds = fs::path(EXITSCOPE_TESTDATA_DIR) / ".." / ".." / "fuzz" / "corpus" / "perfdata_rounds";

// Every event with the marker before it, then the diagnostics and the time span, as one text.
std::string ReadAll(KvmEventSource& src, bool batches, size_t* events = nullptr, size_t* losses = nullptr) {
  std::string out;
  size_t n = 0, l = 0;
  auto add = [&](const KvmEvent& e, const LostEvents* lost) {
    if (lost) {
      out += "lost " + std::to_string(lost->cpu) + " " + std::to_string(lost->ts_ns) + " " +
             std::to_string(lost->count) + "\n";
      ++l;
    }
    ++n;
    for (uint64_t v : {e.ts_ns, uint64_t(e.cpu), uint64_t(e.tid), uint64_t(e.kind), uint64_t(e.isa), uint64_t(e.write),
                       uint64_t(e.vcpu_id), uint64_t(e.reason), uint64_t(e.size), e.rip, e.info1, e.info2,
                       uint64_t(e.intr_info), uint64_t(e.error_code), uint64_t(e.count), uint64_t(e.aux)}) {
      out += std::to_string(v) + " ";
    }
    out += "\n";
  };
  if (batches) {
    KvmEventBatch b;
    while (src.NextBatch(&b)) ForEachEvent(b, add);
  } else {
    KvmEvent e;
    LostEvents lost;
    while (src.Next(&e, &lost)) add(e, lost.cpu >= 0 ? &lost : nullptr);
  }
  for (const auto& d : src.diagnostics().NonZero()) out += d.name + " " + std::to_string(d.count) + "\n";
  out += "span " + std::to_string(src.meta().first_ts_ns) + " " + std::to_string(src.meta().last_ts_ns) + "\n";
  // The names from COMM and FORK records, which the parallel reader takes in chunk by chunk.
  for (const auto& [tid, comm] : src.meta().comm_by_tid) out += "comm " + std::to_string(tid) + " " + comm + "\n";
  for (const auto& [tid, tgid] : src.meta().tgid_by_tid)
    out += "tgid " + std::to_string(tid) + " " + std::to_string(tgid) + "\n";
  if (events) *events = n;
  if (losses) *losses = l;
  return out;
}

// "" when two texts agree, else the first line where they differ (gtest's diff of two texts of
// ~375 K lines would take minutes and gigabytes).
std::string FirstDifference(const std::string& a, const std::string& b) {
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
  if (i == a.size() && i == b.size()) return "";
  auto line = [i](const std::string& t) {
    size_t from = t.rfind('\n', i ? i - 1 : 0);
    from = from == std::string::npos || i == 0 ? 0 : from + 1;
    return t.substr(from, t.find('\n', from) - from);
  };
  return "first: '" + line(a) + "', second: '" + line(b) + "'";
}

// The sequential reader (the open walk, then the records through the mapping, round by round):
// what the chunked reader must answer.
std::unique_ptr<KvmEventSource> OpenSequential(const std::string& path) {
  auto raw = OpenPerfDataRaw(path);
  EXPECT_TRUE(raw.ok()) << path;
  if (!raw.ok()) return nullptr;
  return MakeDecodingSource(std::move(raw.value()));
}

std::string Sequential(const std::string& path, size_t* events = nullptr, size_t* losses = nullptr) {
  auto src = OpenSequential(path);
  return src ? ReadAll(*src, false, events, losses) : "";
}

// The chunked reader on `threads` threads (1: no worker, the caller's thread cuts and parses).
std::string Parallel(const std::string& path, uint64_t chunk_bytes, bool batches, size_t* chunks,
                     unsigned threads = 2) {
  auto in = MappedFile::Open(path);
  EXPECT_TRUE(in.ok()) << path;
  if (!in.ok()) return "";
  auto src = OpenPerfDataParallel(std::move(in.value()), threads, chunk_bytes);
  EXPECT_TRUE(src.ok()) << path;
  if (!src.ok()) return "";
  std::string text = ReadAll(**src, batches);
  *chunks = PerfChunkCount(**src);  // all of them, once read: they are cut as the file is read
  return text;
}

TEST(PerfDataRoundsTest, SameEventsAsSequentialOnRealTraces) {
  const std::vector<std::string> files = {kShared + "/traces/nested-svm-6.1/dual-5000/perf.data",
                                          kShared + "/traces/nested-svm-6.1/kvmprobe-200.perf.data",
                                          kShared + "/traces/nested-arm64-6.1/perf.data"};
  size_t read_in_parallel = 0;
  for (const std::string& path : files) {
    size_t events = 0;
    std::string want = Sequential(path, &events);
    EXPECT_GT(events, 1000u) << path;
    // 4 KB chunks cut every round into parts (perf's rounds here are up to ~8 MB).
    for (uint64_t chunk_bytes : {uint64_t{4096}, uint64_t{64 << 10}, uint64_t{0}}) {
      for (bool batches : {false, true}) {
        for (unsigned threads : {1u, 2u}) {
          size_t chunks = 0;
          std::string got = Parallel(path, chunk_bytes, batches, &chunks, threads);
          if (chunks > 0) ++read_in_parallel;
          EXPECT_EQ(FirstDifference(got, want), "")
              << path << " chunk_bytes " << chunk_bytes << (batches ? " batches" : " Next") << " threads " << threads;
        }
      }
    }
  }
  // Every file-mode file is read chunk by chunk, with workers or without: 3 files x 3 spacings x 2
  // ways to read x 2 thread counts.
  EXPECT_EQ(read_in_parallel, 3u * 3 * 2 * 2);
}

// The chunks a file is cut into at `spacing`: each ends at the first record end `spacing` or more
// past its start (or where the records end). Walked here from the file's bytes, not by the reader.
size_t ChunksAt(const std::string& bytes, uint64_t spacing) {
  // perf_file_header: magic, size, attr_size, attrs{offset,size}, data{offset,size}.
  uint64_t data_offset = 0, data_size = 0;
  std::memcpy(&data_offset, bytes.data() + 40, 8);
  std::memcpy(&data_size, bytes.data() + 48, 8);
  size_t chunks = 0;
  uint64_t pos = 0, begin = 0;
  while (pos + 8 <= data_size) {
    uint16_t size = 0;
    std::memcpy(&size, bytes.data() + data_offset + pos + 6, 2);
    if (size < 8 || size > data_size - pos) break;
    pos += size;
    if (pos - begin >= spacing) {
      ++chunks;
      begin = pos;
    }
  }
  return chunks + (pos > begin ? 1 : 0);
}

// A round longer than the chunk size is read in parts, the parts joined before anything of the
// round is handed out: far more chunks than the file has rounds, and still the sequential answer.
// (A part handed out before its round's end goes unseen here, the real rounds being in order; the
// late-record seeds below, cut after every record, catch it.)
TEST(PerfDataRoundsTest, RoundsCutIntoPartsGiveTheSequentialAnswer) {
  const std::string path = kShared + "/traces/nested-svm-6.1/dual-5000/perf.data";
  Diagnostics diagnostics;
  auto pf = PerfDataFile::Open(path, &diagnostics);
  ASSERT_TRUE(pf.ok());
  const uint64_t rounds = (*pf)->stats().finished_rounds;
  size_t chunks = 0;
  EXPECT_EQ(FirstDifference(Parallel(path, 1 << 20, true, &chunks), Sequential(path)), "");
  EXPECT_GT(chunks, rounds + 1) << "dual-5000's ~8 MB rounds are cut inside at 1 MB";
  EXPECT_EQ(chunks, ChunksAt(testing::ReadFile(path), 1 << 20));
}

// What the walk over the records finds, as one comparable text: counts, names, where the records
// end, the diagnostics. `spacing` 0: Open's walk; else OpenChunked's, chunk by chunk at that
// spacing (*chunks: how many).
std::string RecordWalk(const std::string& bytes, uint64_t spacing, size_t* chunks = nullptr) {
  Diagnostics diagnostics;
  auto view = MappedFile::View({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, "walk.perf.data");
  auto pf = spacing ? PerfDataFile::OpenChunked(std::move(view), &diagnostics)
                    : PerfDataFile::Open(std::move(view), &diagnostics);
  if (!pf.ok()) return "error " + pf.error().message;
  PerfDataFile& f = **pf;
  if (spacing) {
    EXPECT_TRUE(f.scan_pending());
    PerfDataFile::ChunkScan scan;
    HugeVector<uint8_t> read;
    size_t n = 0;
    for (uint64_t begin = 0, end = 0; !scan.ended; ++n) {
      std::vector<PerfDataFile::NameRecord> names;
      const uint8_t* at = f.CutChunk(&scan, spacing, &read, &begin, &end, &names);
      EXPECT_EQ(std::memcmp(at, f.data().data() + begin, end - begin), 0) << "the chunk as the file has it";
      f.ApplyNames(names);
    }
    f.FinishChunkScan(scan);
    if (chunks) *chunks = n;
  }
  const PerfRecordStats& st = f.stats();
  std::string out = "samples " + std::to_string(st.samples) + " lost " + std::to_string(st.lost_records) + "/" +
                    std::to_string(st.lost_events) + " rounds " + std::to_string(st.finished_rounds) + " end " +
                    std::to_string(f.records_end()) + "\n";
  for (const auto& [tid, comm] : f.meta().comm_by_tid) out += "comm " + std::to_string(tid) + " " + comm + "\n";
  for (const auto& [tid, tgid] : f.meta().tgid_by_tid)
    out += "tgid " + std::to_string(tid) + " " + std::to_string(tgid) + "\n";
  for (const DiagnosticCounter& d : diagnostics.NonZero()) out += d.name + " " + std::to_string(d.count) + "\n";
  return out;
}

// The walk done chunk by chunk as the parallel reader reads finds what Open's walk finds, at every
// spacing: on the real file, on the file cut short, and with a record of impossible size planted
// past the middle (the walk stops there).
TEST(PerfDataRoundsTest, ChunkByChunkWalkFindsWhatTheOpenWalkFinds) {
  const std::string whole = testing::ReadFile(kShared + "/traces/nested-svm-6.1/dual-5000/perf.data");
  ASSERT_GT(whole.size(), 16u << 20);
  const std::string want = RecordWalk(whole, 0);
  EXPECT_NE(want.find("comm "), std::string::npos);
  for (uint64_t spacing : {uint64_t{1}, uint64_t{4096}, uint64_t{1} << 20}) {
    size_t chunks = 0;
    EXPECT_EQ(FirstDifference(RecordWalk(whole, spacing, &chunks), want), "") << spacing;
    EXPECT_EQ(chunks, ChunksAt(whole, spacing)) << spacing;
  }
  std::string cut = whole.substr(0, whole.size() * 3 / 4 + 3);
  EXPECT_NE(RecordWalk(cut, 0).find("perfdata.truncated"), std::string::npos);
  for (uint64_t spacing : {uint64_t{1}, uint64_t{1} << 20})
    EXPECT_EQ(FirstDifference(RecordWalk(cut, spacing), RecordWalk(cut, 0)), "") << spacing;

  uint64_t data_offset = 0, data_size = 0;
  std::memcpy(&data_offset, whole.data() + 40, 8);
  std::memcpy(&data_size, whole.data() + 48, 8);
  uint64_t pos = 0;
  while (pos < data_size / 2) {
    uint16_t size = 0;
    std::memcpy(&size, whole.data() + data_offset + pos + 6, 2);
    ASSERT_GE(size, 8u);
    pos += size;
  }
  std::string bad = whole;
  const uint16_t too_small = 4;  // a record header's size field below the header's own 8 bytes
  std::memcpy(bad.data() + data_offset + pos + 6, &too_small, 2);
  const std::string bad_want = RecordWalk(bad, 0);
  EXPECT_NE(bad_want.find("end " + std::to_string(pos) + "\n"), std::string::npos);
  EXPECT_NE(bad_want.find("perfdata.bad_record"), std::string::npos) << bad_want.substr(0, 200);
  for (uint64_t spacing : {uint64_t{1}, uint64_t{4096}, uint64_t{1} << 20})
    EXPECT_EQ(FirstDifference(RecordWalk(bad, spacing), bad_want), "") << spacing;
}

TEST(PerfDataRoundsTest, ReportOpensPerfDataInParallel) {
  auto src = OpenKvmEventSource(kShared + "/traces/nested-svm-6.1/dual-5000/perf.data", InputFormat::kAuto, 2);
  ASSERT_TRUE(src.ok());
  EXPECT_GE(PerfChunkCount(**src), 1u);
  KvmEventBatch b;
  while ((*src)->NextBatch(&b)) {
  }
  EXPECT_GE(PerfChunkCount(**src), 4u);
  // One thread: the same chunks, cut and parsed on the caller's thread (the file read once).
  auto one = OpenKvmEventSource(kShared + "/traces/nested-svm-6.1/dual-5000/perf.data", InputFormat::kAuto, 1);
  ASSERT_TRUE(one.ok());
  while ((*one)->NextBatch(&b)) {
  }
  EXPECT_EQ(PerfChunkCount(**src), PerfChunkCount(**one));
}

// A reader let go before the end (dump --limit, a failed write) stops its workers, some of them
// waiting for room ahead of a merge that stopped, others mid-chunk. Each case returns (else the
// test hangs until ctest's timeout) with the first events the sequential reader has.
TEST(PerfDataRoundsTest, ReaderLetGoEarlyStopsItsThreads) {
  const std::string path = kShared + "/traces/nested-svm-6.1/dual-5000/perf.data";
  auto seq = OpenSequential(path);
  ASSERT_TRUE(seq);
  std::vector<uint64_t> want;
  KvmEvent e;
  while (want.size() < 20000 && seq->Next(&e, nullptr)) want.push_back(e.ts_ns);
  for (uint64_t chunk_bytes : {uint64_t{4096}, uint64_t{0}}) {
    for (size_t batches : {0, 1, 3}) {
      auto in = MappedFile::Open(path);
      ASSERT_TRUE(in.ok());
      auto src = OpenPerfDataParallel(std::move(in.value()), 2, chunk_bytes);
      ASSERT_TRUE(src.ok());
      ASSERT_GT(PerfChunkCount(**src), 0u);
      std::vector<uint64_t> got;
      KvmEventBatch b;
      for (size_t i = 0; i < batches && (*src)->NextBatch(&b); ++i) {
        ForEachEvent(b, [&](const KvmEvent& x, const LostEvents*) { got.push_back(x.ts_ns); });
      }
      EXPECT_EQ(got.size() > 0, batches > 0) << chunk_bytes;
      got.resize(std::min(got.size(), want.size()));
      EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin())) << chunk_bytes << " " << batches;
    }
  }
}
// Seeds of fuzz/perfdata_rounds_seeds.py: a sample of every third round moved a round later, a LOST
// and a LOST_SAMPLES record without trailer times (stamped with the running maximum time).
TEST(PerfDataRoundsTest, LateRecordsAndLossRecordsAsTheSequentialReaderHasThem) {
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(kSeeds)) {
    const std::string path = entry.path().string();
    if (path.find("-late") == std::string::npos) continue;
    ++files;
    size_t events = 0, losses = 0;
    std::string want = Sequential(path, &events, &losses);
    EXPECT_GT(events, 10u) << path;
    EXPECT_GE(losses, 1u) << path << ": the seed's loss records reach an event";
    for (bool batches : {false, true}) {
      for (unsigned threads : {1u, 2u}) {
        size_t chunks = 0;
        EXPECT_EQ(FirstDifference(Parallel(path, 1, batches, &chunks, threads), want), "") << path << " " << threads;
        EXPECT_GE(chunks, 4u) << path;
      }
    }
  }
  EXPECT_GE(files, 2u);
}

}  // namespace
}  // namespace exitscope
