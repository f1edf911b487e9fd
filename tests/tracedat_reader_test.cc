// trace.dat reader on the real hip24-vmx (VMX, v7 zlib, v6) and nested-svm (v7 zstd) files, and on
// damaged copies of them: counts from the fixtures' READMEs, metadata, and error tags/codes.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "decode/kvm_decoder.h"
#include "pipeline/input_detector.h"

namespace exitscope {
namespace {

const std::string kVmx = std::string(EXITSCOPE_SHARED_DIR) + "/traces/hip24-vmx/";
const std::string kSvm = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/";

std::map<EventKind, uint64_t> CountKinds(const std::string& path, TraceMeta* meta_out = nullptr,
                                         bool* data_loss = nullptr) {
  auto src = OpenKvmEventSource(path);
  EXPECT_TRUE(src.ok()) << (src.ok() ? "" : src.error().message);
  std::map<EventKind, uint64_t> counts;
  if (!src.ok()) return counts;
  KvmEvent ev;
  uint64_t last = 0;
  while ((*src)->Next(&ev, nullptr)) {
    ++counts[ev.kind];
    EXPECT_GE(ev.ts_ns, last);
    last = ev.ts_ns;
  }
  if (meta_out) *meta_out = (*src)->meta();
  if (data_loss) *data_loss = (*src)->diagnostics().HasDataLoss();
  return counts;
}

TEST(TraceDatReader, Host2VcpuCountsMatchReadme) {
  TraceMeta meta;
  bool loss = true;
  auto c = CountKinds(kVmx + "host-2vcpu-6.5.dat", &meta, &loss);
  EXPECT_EQ(c[EventKind::kExit], 22772u);
  EXPECT_EQ(c[EventKind::kEntry], 22771u);
  EXPECT_FALSE(loss);
  EXPECT_EQ(meta.source_format, "trace.dat v7 (zlib)");
  ASSERT_EQ(meta.guests.size(), 1u);
  EXPECT_EQ(meta.guests[0].vcpu_to_host_tid.at(0), 60250);
  EXPECT_EQ(meta.guests[0].vcpu_to_host_tid.at(1), 60251);
  EXPECT_EQ(meta.comm_by_tid.at(60250), "CPU 0/KVM");
  EXPECT_NE(meta.kernel.find("6.5.0"), std::string::npos) << meta.kernel;
  EXPECT_FALSE(meta.cpu_first_ts_ns.empty());
}

TEST(TraceDatReader, Host1VcpuCountsMatchReadme) {
  TraceMeta meta;
  auto c = CountKinds(kVmx + "host-1vcpu-6.5.dat", &meta);
  EXPECT_EQ(c[EventKind::kExit], 5860u);
  EXPECT_EQ(c[EventKind::kEntry], 5861u);
  ASSERT_EQ(meta.guests.size(), 1u);
  EXPECT_EQ(meta.guests[0].vcpu_to_host_tid.at(0), 483882);
}

TEST(TraceDatReader, VmxExitsCarryVmxIsaAndVcpu) {
  auto src = OpenKvmEventSource(kVmx + "host-2vcpu-6.5.dat");
  ASSERT_TRUE(src.ok());
  KvmEvent ev;
  std::map<int, uint64_t> per_vcpu;
  while ((*src)->Next(&ev, nullptr)) {
    if (ev.kind != EventKind::kExit) continue;
    ASSERT_EQ(ev.isa, Isa::kVmx);
    // GUEST option: vCPU 0 → 60250, vCPU 1 → 60251 (another VM's thread also exits on this host).
    if (ev.tid == 60250) {
      ASSERT_EQ(ev.vcpu_id, 0);
    }
    if (ev.tid == 60251) {
      ASSERT_EQ(ev.vcpu_id, 1);
    }
    ++per_vcpu[ev.tid];
  }
  EXPECT_EQ(per_vcpu.size(), 3u);
}

TEST(TraceDatReader, HeaderOnlyFilesOpenWithZeroEvents) {
  for (const char* f : {"v6-no-events.dat", "v7-metadata-only.dat"}) {
    TraceMeta meta;
    bool loss = true;
    auto c = CountKinds(kVmx + f, &meta, &loss);
    EXPECT_TRUE(c.empty()) << f;
    EXPECT_FALSE(loss) << f;
  }
  TraceMeta meta;
  CountKinds(kVmx + "v6-no-events.dat", &meta);
  // Its kallsyms (README: 3.1 MB) name the ISA with no kvm_exit to tell; the text is not kept.
  EXPECT_EQ(meta.isa_hint, Isa::kVmx);
  EXPECT_TRUE(meta.kallsyms.empty());
}

TEST(TraceDatReader, SvmTraceDecodesSvmExits) {
  TraceMeta meta;
  auto c = CountKinds(kSvm + "dual-5000/trace.dat", &meta);
  // dual-5000/README.md counts (trace-cmd report | grep -c).
  EXPECT_EQ(c[EventKind::kExit], 65368u);
  EXPECT_EQ(c[EventKind::kEntry], 65368u);
  EXPECT_EQ(c[EventKind::kMsr], 15000u);
  EXPECT_EQ(c[EventKind::kPio], 10000u);
  EXPECT_EQ(c[EventKind::kMmio], 15000u);
  EXPECT_EQ(c[EventKind::kHypercall], 5000u);
  EXPECT_EQ(c[EventKind::kPageFault], 10001u);
  EXPECT_EQ(c[EventKind::kUserspaceExit], 25000u);
  EXPECT_EQ(c[EventKind::kCpuid], 5000u);
  EXPECT_EQ(c[EventKind::kEmulateInsn], 50000u);
  EXPECT_EQ(meta.clock, "global");
  EXPECT_EQ(meta.source_format, "trace.dat v7 (zstd)");
}

// --- damaged inputs -------------------------------------------------------------------------------

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("exitscope_badinput_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Write(const std::string& name, const std::string& bytes) {
    auto p = (dir_ / name).string();
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }
  static std::string Read(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  // Opens and drains; returns the error if opening failed.
  static std::optional<Error> OpenAndDrain(const std::string& path, Diagnostics* diag = nullptr) {
    auto src = OpenRawEventSource(path);
    if (!src.ok()) return src.error();
    RawEvent ev;
    while ((*src)->Next(&ev, nullptr)) {
    }
    if (diag) diag->Merge((*src)->diagnostics());
    return std::nullopt;
  }
  std::filesystem::path dir_;
};

TEST_F(BadInput, MissingFile) {
  auto e = OpenAndDrain((dir_ / "nope.dat").string());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kExitNoInput);
  EXPECT_EQ(e->tag, "input.missing");
  EXPECT_FALSE(e->hint.empty());
}

TEST_F(BadInput, WrongMagic) {
  std::string bytes = Read(kVmx + "host-1vcpu-6.5.dat");
  bytes[3] = 'X';
  auto e = OpenAndDrain(Write("magic.dat", bytes));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kExitDataErr);
  // Binary garbage that is not trace.dat is not identified as anything.
  EXPECT_EQ(e->tag, "input.unknown-format");
  auto forced = OpenRawEventSource(Write("magic2.dat", bytes), InputFormat::kTraceDat);
  ASSERT_FALSE(forced.ok());
  EXPECT_EQ(forced.error().tag, "tracedat.bad-magic");
  EXPECT_FALSE(forced.error().hint.empty());
}

TEST_F(BadInput, UnknownVersion) {
  std::string bytes = Read(kVmx + "host-1vcpu-6.5.dat");
  bytes[10] = '9';  // the version string right after the 10-byte magic
  auto e = OpenAndDrain(Write("version.dat", bytes));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->code, kExitDataErr);
  EXPECT_EQ(e->tag, "tracedat.unknown-version");
  EXPECT_NE(e->hint.find("trace-cmd convert"), std::string::npos);
}

TEST_F(BadInput, TruncatedAnywhereNeverCrashes) {
  std::string bytes = Read(kVmx + "v6-no-events.dat");
  for (size_t cut : {size_t{5}, size_t{12}, size_t{40}, size_t{600}, size_t{5000}, bytes.size() / 2}) {
    auto e = OpenAndDrain(Write("cut.dat", bytes.substr(0, cut)));
    ASSERT_TRUE(e) << "cut at " << cut;
    EXPECT_EQ(e->code, kExitDataErr) << cut;
    EXPECT_EQ(e->tag, "tracedat.truncated") << cut << " " << e->message;
  }
  std::string v7 = Read(kSvm + "kvmprobe-200.trace.dat");
  for (size_t cut : {size_t{30}, size_t{100}, size_t{4000}, size_t{200000}}) {
    auto e = OpenAndDrain(Write("cut7.dat", v7.substr(0, cut)));
    ASSERT_TRUE(e) << "cut at " << cut;
    EXPECT_EQ(e->code, kExitDataErr);
  }
  // Cut inside the event data: trace-cmd writes a last options section (CPUSTAT) after the data,
  // so the file no longer opens; the error names the cut.
  auto e = OpenAndDrain(Write("cutdata.dat", v7.substr(0, v7.size() - 20000)));
  ASSERT_TRUE(e);
  EXPECT_EQ(e->tag, "tracedat.truncated");
  EXPECT_NE(e->hint.find("cut short"), std::string::npos);
}

TEST_F(BadInput, CorruptCompressedChunkIsCountedNotFatal) {
  std::string v7 = Read(kSvm + "kvmprobe-200.trace.dat");
  // CPU 1's data starts at 970752 (trace-cmd dump --options): chunk count, sizes, then zstd bytes.
  // Break the first chunk's zstd frame magic (zstd frames carry no checksum by default, so flipped
  // payload bytes may still decompress).
  for (size_t i = 970752 + 12; i < 970752 + 16; ++i) v7[i] ^= 0x5a;
  Diagnostics diag;
  auto e = OpenAndDrain(Write("chunk.dat", v7), &diag);
  EXPECT_FALSE(e);
  EXPECT_GT(diag.Count("tracedat.corrupt_chunk"), 0u);
  EXPECT_TRUE(diag.HasDataLoss());
}

TEST_F(BadInput, RandomByteFlipsNeverCrash) {
  std::string good = Read(kSvm + "kvmprobe-200.trace.dat");
  uint32_t seed = 12345;
  for (int round = 0; round < 30; ++round) {
    std::string bytes = good;
    for (int k = 0; k < 20; ++k) {
      seed = seed * 1103515245 + 12345;
      bytes[(seed >> 4) % bytes.size()] ^= static_cast<char>(seed >> 24 | 1);
    }
    Diagnostics diag;
    OpenAndDrain(Write("flip.dat", bytes), &diag);  // any outcome but a crash
  }
}

// RawEventSource::LeaveOut (the decoding source's hint): the records of the left-out ids are not
// handed out but counted, every other record comes out as before with its loss marker, and the time
// span and per-CPU starts still cover every record. On trace.dat (zstd and uncompressed, several
// CPUs) and perf.data.
TEST(LeaveOut, HandsOutTheRestAndCountsTheLeftOut) {
  // host-2vcpu was recorded with the events exitscope decodes only: nothing there to leave out.
  for (const auto& [path, has_undecoded] :
       {std::pair{kSvm + "kvmprobe-200.trace.dat", true}, std::pair{kSvm + "kvmprobe-200.perf.data", true},
        std::pair{kSvm + "dual-5000/trace.dat", true}, std::pair{kVmx + "host-2vcpu-6.5.dat", false}}) {
    SCOPED_TRACE(path);
    auto all = OpenRawEventSource(path);
    auto some = OpenRawEventSource(path);
    ASSERT_TRUE(all.ok() && some.ok());
    KvmDecoder decoder((*all)->formats(), Isa::kUnknown, nullptr);
    const std::vector<uint8_t> ids = decoder.UndecodedIds();
    (*some)->LeaveOut(ids);
    auto left_out = [&](const RawEvent& e) { return e.type_id < ids.size() && ids[e.type_id]; };
    RawEvent a, b;
    LostEvents la, lb;
    uint64_t expected_left_out = 0, kept = 0;
    for (;;) {
      la = LostEvents{};
      bool more = (*all)->Next(&a, &la);
      // A record a marker precedes is handed out whatever its id.
      while (more && left_out(a) && la.cpu < 0) {
        ++expected_left_out;
        more = (*all)->Next(&a, &la);
      }
      lb = LostEvents{};
      ASSERT_EQ((*some)->Next(&b, &lb), more);
      if (!more) break;
      ++kept;
      ASSERT_EQ(a.ts_ns, b.ts_ns);
      ASSERT_EQ(a.cpu, b.cpu);
      ASSERT_EQ(a.tid, b.tid);
      ASSERT_EQ(a.type_id, b.type_id);
      ASSERT_EQ(la.cpu, lb.cpu);
      ASSERT_EQ(la.count, lb.count);
    }
    EXPECT_EQ(expected_left_out > 0, has_undecoded);
    EXPECT_GT(kept, 0u);
    EXPECT_EQ((*some)->left_out(), expected_left_out);
    EXPECT_EQ((*all)->left_out(), 0u);
    EXPECT_EQ((*some)->meta().first_ts_ns, (*all)->meta().first_ts_ns);
    EXPECT_EQ((*some)->meta().last_ts_ns, (*all)->meta().last_ts_ns);
    EXPECT_EQ((*some)->meta().cpu_first_ts_ns, (*all)->meta().cpu_first_ts_ns);
  }
}

}  // namespace
}  // namespace exitscope
