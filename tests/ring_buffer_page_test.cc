// Page walker on real kernel pages (tests/data/pages: xxd dumps + trace-cmd's text for them) and on
// synthetic edge cases: time extend, absolute time stamp, padding, missed events, lengths past the end.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "sources/tracedat/ring_buffer_page.h"
#include "xxd.h"

namespace exitscope {
namespace {

const std::string kPages = std::string(EXITSCOPE_TESTDATA_DIR) + "/pages/";

using testing::FromXxd;

std::map<uint16_t, std::string> EventNamesById() {
  std::map<uint16_t, std::string> names;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/formats")) {
    std::ifstream in(e.path());
    std::string name, line;
    while (std::getline(in, line)) {
      if (line.starts_with("name: ")) name = line.substr(6);
      if (line.starts_with("ID: ")) names[static_cast<uint16_t>(std::stoul(line.substr(4)))] = name;
    }
  }
  return names;
}

void CheckRealPage(const std::string& name) {
  std::vector<uint8_t> page = FromXxd(kPages + name + ".xxd");
  page.resize(4096, 0);  // the dump holds header + commit bytes only
  std::ifstream text(kPages + name + ".txt");
  auto names = EventNamesById();
  PageWalker w;
  RingBufferStats stats;
  uint64_t missed = 1;
  ASSERT_TRUE(w.Begin(page, PageLayout{}, &stats, &missed));
  EXPECT_EQ(missed, 0u);
  PageRecord rec;
  std::string line;
  size_t n = 0;
  while (w.Next(&rec)) {
    ASSERT_TRUE(std::getline(text, line)) << "more records than trace-cmd shows";
    // "        kvmprobe-499   [001]    14.747994: kvm_entry: …"
    size_t rb = line.find(']'), colon = line.find(':', rb);
    std::string ts = line.substr(rb + 1, colon - rb - 1);
    uint64_t us = std::stoull(ts.substr(0, ts.find('.'))) * 1000000 + std::stoull(ts.substr(ts.find('.') + 1));
    EXPECT_EQ((rec.ts + 500) / 1000, us) << line;  // global clock: ns already
    uint16_t id = static_cast<uint16_t>(LoadLe(rec.payload.data(), 2));
    EXPECT_NE(line.find(" " + names[id] + ":"), std::string::npos) << names[id] << " vs " << line;
    EXPECT_NE(line.find("-" + std::to_string(LoadLe(rec.payload.data() + 4, 4)) + " "), std::string::npos);
    ++n;
  }
  EXPECT_FALSE(std::getline(text, line)) << "trace-cmd shows more: " << line;
  EXPECT_GT(n, 0u);
  EXPECT_EQ(stats.truncated_pages + stats.bad_lengths, 0u);
}

TEST(RingBufferPage, RealPagesMatchTraceCmd) {
  CheckRealPage("svm61-cpu0-page0");
  CheckRealPage("svm61-cpu1-page0");
}

TEST(RingBufferPage, LayoutFromHeaderPageText) {
  const char* text =
      "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
      "\tfield: local_t commit;\toffset:8;\tsize:4;\tsigned:1;\n"
      "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
      "\tfield: char data;\toffset:12;\tsize:4084;\tsigned:1;\n";
  PageLayout l = PageLayout::FromHeaderPage(text);
  EXPECT_EQ(l.commit_size, 4u);
  EXPECT_EQ(l.data_offset, 12u);
}

// Builds a page: header {ts, commit} then 32-bit words.
std::vector<uint8_t> Page(uint64_t ts, uint64_t commit_flags, const std::vector<uint32_t>& words,
                          uint64_t stored_missed = 0) {
  std::vector<uint8_t> p(4096, 0);
  uint64_t commit = words.size() * 4 | commit_flags;
  std::memcpy(p.data(), &ts, 8);
  std::memcpy(p.data() + 8, &commit, 8);
  std::memcpy(p.data() + 16, words.data(), words.size() * 4);
  std::memcpy(p.data() + 16 + words.size() * 4, &stored_missed, 8);
  return p;
}

uint32_t Hdr(uint32_t type_len, uint32_t delta) { return type_len | delta << 5; }

TEST(RingBufferPage, ExtendsStampsPaddingAndLargeRecords) {
  auto page = Page(1000, 0,
                   {Hdr(1, 5), 0xaaaa,                        // data, 4 bytes, ts 1005
                    Hdr(kTypeTimeExtend, 3), 2,               // +((2<<27)+3)
                    Hdr(2, 1), 0xb, 0xc,                      // ts 1005+(2<<27)+3+1
                    Hdr(kTypePadding, 7), 8, 0xdead,          // discarded record: array[0] counts itself, +7
                    Hdr(0, 2), 4 + 6, 0x11, 0x22,             // large record of 6 bytes (+2)
                    Hdr(kTypeTimeStamp, 9), 1,                // absolute (1<<27)+9
                    Hdr(1, 1), 0x33, Hdr(kTypePadding, 0)});  // rest of page empty
  PageWalker w;
  RingBufferStats stats;
  uint64_t missed;
  ASSERT_TRUE(w.Begin(page, PageLayout{}, &stats, &missed));
  PageRecord r;
  std::vector<std::pair<uint64_t, size_t>> got;
  while (w.Next(&r)) got.emplace_back(r.ts, r.payload.size());
  uint64_t t2 = 1005 + (2ull << 27) + 3 + 1;
  std::vector<std::pair<uint64_t, size_t>> want = {{1005, 4}, {t2, 8}, {t2 + 7 + 2, 6}, {(1ull << 27) + 9 + 1, 4}};
  EXPECT_EQ(got, want);
  EXPECT_EQ(stats.truncated_pages + stats.bad_lengths, 0u);
}

TEST(RingBufferPage, MissedEventsWithAndWithoutCount) {
  PageWalker w;
  RingBufferStats stats;
  uint64_t missed;
  auto stored = Page(1, kMissedEventsFlag | kMissedStoredFlag, {Hdr(1, 1), 7}, 42);
  w.Begin(stored, PageLayout{}, &stats, &missed);
  EXPECT_EQ(missed, 42u);
  auto unknown = Page(1, kMissedEventsFlag, {Hdr(1, 1), 7});
  w.Begin(unknown, PageLayout{}, &stats, &missed);
  EXPECT_EQ(missed, ~0ull);
  EXPECT_EQ(stats.missed_events, 42u);
  EXPECT_EQ(stats.missed_unknown, 1u);
}

TEST(RingBufferPage, BadLengthsStayInBounds) {
  PageWalker w;
  RingBufferStats stats;
  uint64_t missed;
  PageRecord r;
  // A large record claiming 1 MB inside a 12-byte commit.
  auto huge = Page(1, 0, {Hdr(0, 1), 1 << 20, 0});
  ASSERT_TRUE(w.Begin(huge, PageLayout{}, &stats, &missed));
  EXPECT_FALSE(w.Next(&r));
  EXPECT_EQ(stats.truncated_pages, 1u);
  // type_len 3 (12 bytes) but only 4 bytes left in the commit.
  auto cut = Page(1, 0, {Hdr(3, 1), 0});
  ASSERT_TRUE(w.Begin(cut, PageLayout{}, &stats, &missed));
  EXPECT_FALSE(w.Next(&r));
  EXPECT_EQ(stats.truncated_pages, 2u);
  // Commit larger than the page.
  auto over = Page(1, 0, {Hdr(1, 1), 5});
  uint64_t commit = 100000;
  std::memcpy(over.data() + 8, &commit, 8);
  w.Begin(over, PageLayout{}, &stats, &missed);
  while (w.Next(&r)) {
  }
  EXPECT_GE(stats.truncated_pages, 3u);
  // A page shorter than its header.
  std::vector<uint8_t> tiny(10, 0);
  EXPECT_FALSE(w.Begin(tiny, PageLayout{}, &stats, &missed));
}

}  // namespace
}  // namespace exitscope
