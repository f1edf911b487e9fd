// Guest symbolization on a real kernel's symbols: Debian's /boot/System.map when it is the real one
// (the linux-image package ships a one-line placeholder; the real map is in -dbg), else the running
// kernel's /proc/kallsyms (root sees real addresses). A KASLR boot is simulated by shifting every
// address by a 2 MiB multiple; inference must recover that slide.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "symbols/guest_symbolizer.h"
#include "symbols/kaslr_slide.h"
#include "symbols/symbol_table.h"

namespace exitscope {
namespace {

constexpr int64_t kTestSlide = 243 * static_cast<int64_t>(kKaslrAlignBytes);  // 0x1e600000

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The unrelocated symbol text of a real kernel, with core-kernel lines only.
std::string RealKernelMapText() {
  namespace fs = std::filesystem;
  std::vector<std::string> candidates;
  if (fs::is_directory("/boot")) {
    for (const auto& e : fs::directory_iterator("/boot")) {
      if (e.path().filename().string().starts_with("System.map-")) candidates.push_back(e.path());
    }
  }
  candidates.push_back("/proc/kallsyms");
  for (const auto& path : candidates) {
    std::string text = ReadAll(path);
    std::istringstream in(text);
    std::string line, core;
    size_t nonzero = 0;
    while (std::getline(in, line)) {
      if (line.find('[') != std::string::npos) continue;  // module lines: not part of the image
      if (!line.starts_with("0000000000000000")) ++nonzero;
      core += line + "\n";
    }
    if (nonzero > 10000) return core;
  }
  return {};
}

std::string Shift(const std::string& text, int64_t slide) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    uint64_t a = std::stoull(line.substr(0, 16), nullptr, 16);
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(a + slide));
    out += buf + line.substr(16) + "\n";
  }
  return out;
}

class RealKernelSymbols : public ::testing::Test {
 protected:
  void SetUp() override {
    map_text_ = RealKernelMapText();
    if (map_text_.empty()) GTEST_SKIP() << "no real kernel symbols readable (/boot/System.map-*, /proc/kallsyms)";
    auto map = SymbolTable::ParseKallsymsText(map_text_, "map");
    ASSERT_TRUE(map.ok()) << map.error().message;
    map_ = std::move(map.value());
    dir_ = std::filesystem::temp_directory_path() / ("exitscope-syms-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir_);
    map_path_ = (dir_ / "System.map").string();
    kallsyms_path_ = (dir_ / "kallsyms").string();
    std::ofstream(map_path_) << map_text_;
    std::ofstream(kallsyms_path_) << Shift(map_text_, kTestSlide);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // Exit RIPs a KASLR'd guest would show: inside the first present site function of each class.
  std::vector<SiteRip> KaslrExitRips() const {
    std::vector<SiteRip> rips;
    for (auto [cls, names] :
         {std::pair{ExitClass::kHlt,
                    std::vector<std::string>{"default_idle", "native_safe_halt", "pv_native_safe_halt"}},
          std::pair{ExitClass::kMsrWrite, std::vector<std::string>{"native_write_msr", "lapic_next_deadline"}}}) {
      for (const auto& n : names) {
        if (const Symbol* s = map_.ByName(n); s && s->size > 4) {
          rips.push_back({s->addr + 3 + static_cast<uint64_t>(kTestSlide), cls});
          break;
        }
      }
    }
    return rips;
  }

  std::string map_text_, map_path_, kallsyms_path_;
  std::filesystem::path dir_;
  SymbolTable map_;
};

TEST_F(RealKernelSymbols, PairOfKallsymsAndMapGivesTheSlide) {
  auto shifted = SymbolTable::LoadKallsymsFile(kallsyms_path_);
  ASSERT_TRUE(shifted.ok());
  SlideEstimate e = SlideFromPair(*shifted, map_);
  ASSERT_TRUE(e.found);
  EXPECT_EQ(e.slide, kTestSlide);
  EXPECT_EQ(e.runner_up, 0u);
  EXPECT_GT(e.votes, 10000u);
}

TEST_F(RealKernelSymbols, ExitSiteRipsGiveTheSlide) {
  auto rips = KaslrExitRips();
  ASSERT_EQ(rips.size(), 2u) << "kernel lacks both an idle and an MSR-write site";
  SlideEstimate e = SlideFromExitSites(map_, rips);
  ASSERT_TRUE(e.found) << e.detail;
  EXPECT_EQ(e.slide, kTestSlide) << e.detail;
  EXPECT_EQ(e.votes, 2u);
  // The same RIPs against the already shifted table need no slide.
  auto shifted = SymbolTable::LoadKallsymsFile(kallsyms_path_);
  ASSERT_TRUE(shifted.ok());
  EXPECT_EQ(SlideFromExitSites(*shifted, rips).slide, 0);
}

TEST_F(RealKernelSymbols, SystemMapSymbolizesKaslrRips) {
  auto rips = KaslrExitRips();
  GuestSymbolOptions opt;
  opt.system_map = map_path_;
  auto g = GuestSymbolizer::Load(opt, rips);
  ASSERT_TRUE(g.ok()) << g.error().message;
  EXPECT_EQ(g->slide().slide, kTestSlide) << g->Describe();
  const Symbol* msr = map_.ByName("native_write_msr");
  if (!msr) msr = map_.ByName("lapic_next_deadline");
  ASSERT_NE(msr, nullptr);
  EXPECT_EQ(g->Name(msr->addr + kTestSlide + 3), msr->name + "+0x3");
  EXPECT_EQ(g->Function(msr->addr + kTestSlide), msr->name);
  EXPECT_EQ(g->Name(0x1030), "0x1030");  // guest user / real mode: never symbolized
  EXPECT_EQ(GuestSymbolizer::Space(0x1030), "user");
  // Without the slide the same RIP would name a different function (or none).
  EXPECT_NE(map_.Find(msr->addr + kTestSlide + 3), msr);
}

TEST_F(RealKernelSymbols, KallsymsAndMapTogetherReportThePairSlide) {
  GuestSymbolOptions opt;
  opt.kallsyms = kallsyms_path_;
  opt.system_map = map_path_;
  auto g = GuestSymbolizer::Load(opt, KaslrExitRips());
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->slide().slide, 0);  // the kallsyms copy is from the traced "boot"
  ASSERT_TRUE(g->pair_slide().has_value());
  EXPECT_EQ(g->pair_slide()->slide, kTestSlide);
  EXPECT_NE(g->Describe().find("0x1e600000"), std::string::npos) << g->Describe();
}

TEST(GuestSymbols, DebianPlaceholderMapIsRejectedWithAHint) {
  auto t = SymbolTable::ParseKallsymsText(
      "ffffffffffffffff B The real System.map is in the linux-image-<version>-dbg package\n", "map");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().tag, "symbols.no-text-symbols");
  EXPECT_NE(t.error().hint.find("-dbg"), std::string::npos);
}

TEST(GuestSymbols, HiddenAddressesAreRejected) {
  auto t = SymbolTable::ParseKallsymsText("0000000000000000 T _text\n0000000000000000 t foo\n", "kallsyms");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().tag, "symbols.addresses-hidden");
}

TEST(GuestSymbols, AliasesPreferTheSpecificNameAndModulesAreKept) {
  auto t = SymbolTable::ParseKallsymsText(
      "ffffffff81000000 T _stext\nffffffff81000000 T startup_64\nffffffff81000100 t next\n"
      "ffffffffc0201000 t vmx_vcpu_run\t[kvm_intel]\n",
      "k");
  ASSERT_TRUE(t.ok());
  ASSERT_NE(t->Find(0xffffffff81000010), nullptr);
  EXPECT_EQ(t->Find(0xffffffff81000010)->name, "startup_64");
  GuestSymbolizer g = GuestSymbolizer::FromTable(std::move(t.value()), {}, true);
  EXPECT_EQ(g.Name(0xffffffffc0201010), "vmx_vcpu_run+0x10 [kvm_intel]");
}

TEST(GuestSymbols, RipsOutsideEverySiteFindNoSlide) {
  auto t = SymbolTable::ParseKallsymsText("ffffffff81000000 T native_write_msr\nffffffff81000040 t other\n", "k");
  ASSERT_TRUE(t.ok());
  std::vector<SiteRip> rips = {{0xffffffff81000050, ExitClass::kMsrWrite}};  // inside `other`
  EXPECT_FALSE(SlideFromExitSites(*t, rips).found);
}

TEST(GuestSymbols, ElfFunctionSymbolsOfARealBinary) {
  // Our own binary is a real ELF with .symtab (RelWithDebInfo is not stripped).
  auto t = SymbolTable::LoadElfFile(EXITSCOPE_BINARY);
  ASSERT_TRUE(t.ok()) << t.error().message;
  const Symbol* m = t->ByName("main");
  ASSERT_NE(m, nullptr);
  EXPECT_GT(m->size, 0u);
  EXPECT_EQ(t->Find(m->addr + m->size - 1), m);
  auto bad = SymbolTable::LoadElfFile("/boot/System.map-does-not-exist");
  EXPECT_FALSE(bad.ok());
}

}  // namespace
}  // namespace exitscope
