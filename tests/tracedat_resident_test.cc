// The trace.dat reader's footprint at open: a compressed trace's chunk table used to be walked at
// open, mapping in every page of its data before the first chunk was decompressed; the claims it
// checks are now checked by the prefetcher as it reads (sources/tracedat/chunk_prefetcher.h), so
// open leaves the data out of memory and peak memory does not grow with the file (issue 18).
// Measured on the mapping itself (/proc/self/pagemap), not by time.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "pipeline/tracedat_reader.h"
#include "sources/mapped_file.h"
#include "sources/tracedat/tracedat_header.h"
#include "sources/tracedat/tracedat_pages.h"
#include "test_util.h"

namespace exitscope {
namespace {

const std::string kDual = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/dual-5000/trace.dat";

// Bytes of [begin, begin + size) mapped in (present in /proc/self/pagemap, bit 63: page present),
// or -1 when pagemap cannot be read.
int64_t ResidentBytes(const uint8_t* begin, uint64_t size) {
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  int fd = ::open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  const uint64_t first = reinterpret_cast<uintptr_t>(begin) / page;
  const uint64_t last = (reinterpret_cast<uintptr_t>(begin) + size + page - 1) / page;
  std::vector<uint64_t> entries(last - first);
  const ssize_t want = static_cast<ssize_t>(entries.size() * sizeof(uint64_t));
  const ssize_t got = ::pread(fd, entries.data(), want, static_cast<off_t>(first * sizeof(uint64_t)));
  ::close(fd);
  if (got != want) return -1;
  int64_t n = 0;
  for (uint64_t e : entries) n += (e >> 63) & 1;
  return n * static_cast<int64_t>(page);
}

// Mapped-in bytes of every CPU's data in `file`.
int64_t ResidentData(const uint8_t* file, const TraceDatLayout& l) {
  int64_t n = 0;
  for (const auto& c : l.cpus) {
    const int64_t r = ResidentBytes(file + c.offset, c.size);
    if (r < 0) return -1;
    n += r;
  }
  return n;
}

// The reader's open (headers, options, sections) into *shared; the layout says where the data is.
Result<TraceDatLayout> OpenShared(std::unique_ptr<MappedFile> file, const std::string& path, TraceDatShared* shared) {
  TraceMeta meta;
  FormatRegistry formats;
  Diagnostics diag;
  return OpenTraceDatShared(std::move(file), path, shared, &meta, &formats, &diag);
}

// Where `file`'s data is, from its header alone (the reader is not opened).
Result<TraceDatLayout> ParseLayout(const MappedFile& file) {
  FormatRegistry formats;
  TraceMeta meta;
  Diagnostics diag;
  return ParseTraceDatHeader(file.bytes(), file.path(), &formats, &meta, &diag);
}

uint64_t DataBytes(const TraceDatLayout& l) {
  uint64_t n = 0;
  for (const auto& c : l.cpus) n += c.size;
  return n;
}

TEST(TraceDatResident, OpeningACompressedTraceLeavesItsDataOutOfMemory) {
  // The measurement sees data that is read: summing a mapping's bytes maps them in.
  auto kept = MappedFile::Open(kDual);
  ASSERT_TRUE(kept.ok());
  auto layout_a = ParseLayout(**kept);
  ASSERT_TRUE(layout_a.ok());
  ASSERT_TRUE(layout_a->data_compressed);
  const uint64_t data = DataBytes(*layout_a);
  ASSERT_GT(data, 1u << 20);
  const uint8_t* kept_base = (*kept)->bytes().data();
  uint64_t sum = 0;
  for (const auto& c : layout_a->cpus) {
    for (uint64_t i = 0; i < c.size; i += 64) sum += kept_base[c.offset + i];
  }
  EXPECT_GE(ResidentData(kept_base, *layout_a), static_cast<int64_t>(data / 2)) << sum;

  // The reader's open: headers, options and sections; none of the chunks.
  auto file = MappedFile::Open(kDual);
  ASSERT_TRUE(file.ok());
  const uint8_t* base = (*file)->bytes().data();
  TraceDatShared shared;
  auto layout = OpenShared(std::move(*file), kDual, &shared);
  ASSERT_TRUE(layout.ok());
  EXPECT_EQ(DataBytes(*layout), data);
  const int64_t resident = ResidentData(base, *layout);
  ASSERT_GE(resident, 0);
  EXPECT_LT(resident, static_cast<int64_t>(data / 16)) << "of " << data << " bytes of chunks";
}

// Reading a compressed trace to its end maps none of its chunks either: the prefetcher reads them
// with pread (a mapped chunk page stayed resident until its CPU's stream had gone 4 MB past it, and
// peak memory grew with the file up to the release steps of every CPU, ~5 MB at 10 M events).
TEST(TraceDatResident, ReadingACompressedTraceMapsNoneOfItsChunks) {
  auto file = MappedFile::Open(kDual);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->mapped());
  const uint8_t* base = (*file)->bytes().data();
  auto layout = ParseLayout(**file);
  ASSERT_TRUE(layout.ok());
  ASSERT_TRUE(layout->data_compressed);
  const uint64_t data = DataBytes(*layout);
  auto source = OpenTraceDat(std::move(*file), ClockOptions{});
  ASSERT_TRUE(source.ok());
  RawEvent e;
  uint64_t records = 0;
  while ((*source)->Next(&e, nullptr)) ++records;
  EXPECT_GT(records, 100000u);
  const int64_t resident = ResidentData(base, *layout);
  ASSERT_GE(resident, 0);
  EXPECT_LT(resident, static_cast<int64_t>(data / 16)) << "of " << data << " bytes of chunks, after reading them all";
}

// Every record of every CPU stream of `shared`, one line each (time, type, payload bytes), walked
// in place (`read` false) or read with pread into buffers; a window from each CPU's page
// `first_page` to a hint of one page past it when `windowed` (the walk reads on past the hint).
// *kept: the buffers' bytes once every stream ended.
std::string WalkRecords(const TraceDatShared& shared, const TraceDatLayout& layout, bool read, bool windowed,
                        uint64_t* kept = nullptr) {
  std::string out;
  PageCounters counters;
  std::vector<std::vector<uint8_t>> buffers(layout.cpus.size());
  for (size_t c = 0; c < layout.cpus.size(); ++c) {
    TimeWindow w;
    if (windowed) w = TimeWindow{true, 0, UINT64_MAX, 3, 4};
    TraceDatCpuStream s(&shared, &counters, layout.cpus[c], nullptr, w, read ? &buffers[c] : nullptr);
    while (s.Advance()) {
      out += std::to_string(s.head.ts_ns) + " " + std::to_string(s.head.type_id) + " ";
      for (uint8_t b : s.head.payload) out += std::to_string(b) + ",";
      out += "\n";
    }
  }
  if (kept) {
    *kept = 0;
    for (const auto& b : buffers) *kept += b.capacity();
  }
  return out;
}

// An uncompressed trace's pages are read with pread, by the sequential and the sliced readers
// alike (TraceDatCpuStream's read buffer): the same records as walked in place, and not a page of
// the file's data mapped in (on this kind of VM a mapped 4 KB page costs more than copying it).
// The sequential walk frees its buffer once its stream ended (a window's is kept for the next), and
// reads in smaller steps when many CPUs share the budget: the same records. A window reads the
// pages its hint names, no more.
TEST(TraceDatResident, UncompressedPagesAreReadNotMapped) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("exitscope-resident-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string v6 = (dir / "dual-5000.v6.dat").string();
  const std::string cmd = "trace-cmd convert -i '" + kDual + "' -o '" + v6 + "' --file-version 6 >/dev/null 2>&1";
  ASSERT_EQ(testing::RunCommand(cmd).status, 0) << cmd << " (trace-cmd comes from scripts/install-deps.sh)";

  auto file = MappedFile::Open(v6);
  ASSERT_TRUE(file.ok());
  ASSERT_TRUE((*file)->mapped());
  const uint8_t* base = (*file)->bytes().data();
  TraceDatShared read;
  auto layout = OpenShared(std::move(*file), v6, &read);
  ASSERT_TRUE(layout.ok());
  ASSERT_FALSE(layout->data_compressed);
  ASSERT_GT(DataBytes(*layout), 1u << 20);
  const int64_t at_open = ResidentData(base, *layout);
  ASSERT_GE(at_open, 0);

  const std::string bytes = testing::ReadFile(v6);
  auto view = MappedFile::View({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()}, v6);
  TraceDatShared in_place;
  ASSERT_TRUE(OpenShared(std::move(view), v6, &in_place).ok());

  for (bool windowed : {false, true}) {
    const std::string want = WalkRecords(in_place, *layout, false, windowed);
    EXPECT_GT(want.size(), 1u << 20);
    uint64_t kept = 0;
    const std::string got = WalkRecords(read, *layout, true, windowed, &kept);
    EXPECT_TRUE(got == want) << (windowed ? "windowed" : "whole streams") << ": " << got.size() << " vs " << want.size()
                             << " bytes of records";
    if (windowed) {
      EXPECT_GT(kept, 0u) << "a window's buffer is kept for the next window";
    } else {
      EXPECT_EQ(kept, 0u) << "bytes of read buffers left after the streams ended";
    }
  }
  // 256 CPUs' worth of streams share the budget: each reads a few pages at a time.
  EXPECT_EQ(read.sequential_read_bytes, TraceDatShared::kSequentialReadMax);
  read.ShareSequentialReads(256);
  EXPECT_EQ(read.sequential_read_bytes, TraceDatShared::kSequentialReadMin);
  EXPECT_LE(256 * read.sequential_read_bytes, TraceDatShared::kSequentialReadBudget);
  EXPECT_TRUE(WalkRecords(read, *layout, true, false) == WalkRecords(in_place, *layout, false, false));

  // A window over a page of each CPU (a 1 MB slice of a host with hundreds of CPUs) reads that page,
  // not 64 KB of each CPU: the window from page 3 ends just past the first record there.
  PageCounters counters;
  size_t windows = 0;
  for (size_t c = 0; c < layout->cpus.size(); ++c) {
    TraceDatCpuStream probe(&in_place, &counters, layout->cpus[c], nullptr, TimeWindow{true, 0, UINT64_MAX, 3, 4});
    if (!probe.Advance()) continue;  // a CPU with no record past page 3
    ++windows;
    const TimeWindow w{true, 0, probe.head.ts_ns + 1, 3, 4};
    std::vector<uint8_t> buffer;
    TraceDatCpuStream one_page(&read, &counters, layout->cpus[c], nullptr, w, &buffer);
    TraceDatCpuStream want(&in_place, &counters, layout->cpus[c], nullptr, w);
    uint64_t records = 0;
    while (want.Advance()) {
      ASSERT_TRUE(one_page.Advance());
      EXPECT_EQ(one_page.head.ts_ns, want.head.ts_ns);
      ++records;
    }
    EXPECT_FALSE(one_page.Advance());
    EXPECT_GE(records, 1u);
    EXPECT_LE(buffer.capacity(), read.page_size) << "bytes read for a one-page window, cpu " << c;
  }
  EXPECT_GE(windows, 1u);
  const int64_t resident = ResidentData(base, *layout);
  ASSERT_GE(resident, 0);
  EXPECT_EQ(resident, at_open) << "bytes of the data mapped in by the walks";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace exitscope
