// base/huge_pages.h: buffers mapped at huge page boundaries and marked for transparent huge pages,
// HugeVector's split between the heap and huge pages, and HugeArray moving past its room intact.
#include "base/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace exitscope {
namespace {

bool OnHugePageBoundary(const void* p) { return reinterpret_cast<uintptr_t>(p) % kHugePageBytes == 0; }

// The THPeligible line of /proc/self/smaps for the mapping that starts at `p` ("" when none).
std::string ThpEligible(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in = false;
  while (std::getline(smaps, line)) {
    const size_t dash = line.find('-');  // a mapping's first line: "start-end perms ..."
    if (dash != std::string::npos && dash > 0 && line.find(' ') > dash) {
      in = std::stoull(line.substr(0, dash), nullptr, 16) == reinterpret_cast<uintptr_t>(p);
      continue;
    }
    if (in && line.rfind("THPeligible:", 0) == 0) return line.substr(line.find_last_of(' ') + 1);
  }
  return "";
}

// What the kernel's transparent huge page mode says a madvised mapping is: "1" unless it is "never".
std::string ExpectedEligible() {
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(mode, text);
  return text.empty() || text.find("[never]") != std::string::npos ? "0" : "1";
}

TEST(HugePagesTest, MappedOnABoundaryAndMarked) {
  HugePages pages(3 << 20);  // rounded up to two huge pages
  ASSERT_NE(pages.data(), nullptr);
  EXPECT_TRUE(OnHugePageBoundary(pages.data()));
  pages.data()[0] = 1;
  pages.data()[(3 << 20) - 1] = 2;  // the whole size is writable
  EXPECT_EQ(ThpEligible(pages.data()), ExpectedEligible());

  HugePages moved(std::move(pages));
  EXPECT_EQ(pages.data(), nullptr);  // NOLINT(bugprone-use-after-move): the moved-from state is the point
  EXPECT_EQ(moved.data()[(3 << 20) - 1], 2);
  EXPECT_EQ(moved.size(), size_t{3} << 20);
}

// How many of the 4 KB pages of [p, p + bytes) are resident (mincore).
size_t ResidentPages(const void* p, size_t bytes) {
  std::vector<unsigned char> in((bytes + 4095) / 4096);
  if (mincore(const_cast<void*>(p), bytes, in.data()) != 0) return SIZE_MAX;
  size_t n = 0;
  for (unsigned char c : in) n += c & 1;
  return n;
}

TEST(HugePagesTest, SmallBuffersStayInSmallPages) {
  // A buffer under kHugeAllocationMin written once holds one 4 KB page, not a 2 MB one (a chunk per
  // record of a fuzz input held ~700 MB when each small store was a huge page).
  constexpr size_t kBytes = 256 << 10;
  HugePages small(kBytes);
  ASSERT_NE(small.data(), nullptr);
  small.data()[100] = 1;
  small.data()[kBytes - 1] = 2;  // the whole size is writable
  std::ifstream mode("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(mode, text);
  // In "always" mode the kernel may give any anonymous mapping a huge page; not ours to decide.
  if (text.find("[always]") == std::string::npos) {
    EXPECT_EQ(ResidentPages(small.data(), kBytes), 2u);
  }

  HugeArray<uint64_t> grown;  // outgrows a small room into small pages of its own
  uint64_t room[4];
  grown.Reset(room, 4);
  for (uint64_t i = 0; i < 5; ++i) grown.push_back(i);
  EXPECT_TRUE(grown.outgrown());
  EXPECT_EQ(grown[4], 4u);
}

TEST(HugePagesTest, VectorsTakeHugePagesOnlyWhenLarge) {
  HugeVector<uint64_t> small(1000);
  HugeVector<uint64_t> large(kHugeAllocationMin / sizeof(uint64_t));
  EXPECT_TRUE(OnHugePageBoundary(large.data()));
  EXPECT_EQ(ThpEligible(large.data()), ExpectedEligible());
  EXPECT_EQ(ThpEligible(small.data()), "");  // inside the heap, not a mapping of its own
  for (size_t i = 0; i < large.size(); ++i) large[i] = i;
  large.resize(large.size() * 3);  // moves to a larger mapping, contents kept
  EXPECT_EQ(large[12345], 12345u);
  EXPECT_TRUE(OnHugePageBoundary(large.data()));
}

struct Item {
  uint64_t a;
  uint32_t b;
};

TEST(HugePagesTest, ArrayAppendsInPlaceThenMovesPastItsRoom) {
  HugePages store(64 * sizeof(Item));
  HugeArray<Item> items;
  items.Reset(reinterpret_cast<Item*>(store.data()), 64);
  for (uint32_t i = 0; i < 64; ++i) items.push_back({i * 3u, i});
  EXPECT_EQ(items.data(), reinterpret_cast<Item*>(store.data()));
  EXPECT_FALSE(items.outgrown());
  Item& e = items.emplace_back();  // the 65th: its own pages, the 64 before copied over
  e.a = 7;
  EXPECT_TRUE(items.outgrown());
  EXPECT_NE(items.data(), reinterpret_cast<Item*>(store.data()));
  ASSERT_EQ(items.size(), 65u);
  for (uint32_t i = 0; i < 64; ++i) EXPECT_EQ(items[i].a, i * 3u) << i;
  EXPECT_EQ(items.back().a, 7u);
  items.pop_back();
  EXPECT_EQ(items.size(), 64u);
  Item* slot = items.append_uninitialized();  // the caller writes it
  EXPECT_EQ(slot, &items.back());
  *slot = {9, 9};
  EXPECT_EQ(items[64].a, 9u);
  items.pop_back();
  items.Reset(reinterpret_cast<Item*>(store.data()), 64);  // back in the store, empty
  EXPECT_TRUE(items.empty());
  EXPECT_FALSE(items.outgrown());
}

}  // namespace
}  // namespace exitscope
