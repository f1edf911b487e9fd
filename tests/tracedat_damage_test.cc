// trace.dat damage that used to give a quiet, smaller answer with exit 0 (issue 19): each kind is
// made here from a real shared trace and must now be a named counter with a PARTIAL result (65),
// or an error with a hint — with every event the file still holds read.
#include <gtest/gtest.h>

#include "damage_test.h"

namespace exitscope::testing {
namespace {

// trace-cmd 3.1.6, v7 zstd, 2 CPUs; its README: 2,610 kvm_exit on CPU 1.
const char kProbe[] = "nested-svm-6.1/kvmprobe-200.trace.dat";
const char kWhole[] = "kvm_exit 2,610 · kvm_entry 2,610";

void ExpectPartial(const DamageRun& r, const std::string& counter) {
  EXPECT_EQ(r.status, 65) << r.out;
  EXPECT_TRUE(Has(r.out, "PARTIAL RESULT: ")) << r.out;
  EXPECT_TRUE(Has(r.out, counter)) << r.out;
}

TEST(TracedatDamage, OptionsChainLoopingBackIsFlagged) {
  std::string f = ReadShared(kProbe);
  V7Map m = MapV7(f);
  ASSERT_EQ(m.sections.size(), 2u);
  // The last section's DONE points at the first again.
  const V7Map::Option* done = m.Find(0, 1);
  ASSERT_NE(done, nullptr);
  StoreAt<uint64_t>(&f, done->at + 6, m.sections[0]);
  DamageRun r = RunOnDamaged("loop.dat", f, "report");
  ExpectPartial(r, "tracedat.options_loop");
  EXPECT_TRUE(Has(r.out, kWhole)) << "every section was read once: " << r.out;
  EXPECT_FALSE(Has(r.out, "tracedat.instance_skipped")) << "the BUFFER option read twice";
}

TEST(TracedatDamage, DoneOptionOfWrongSizeIsAnError) {
  std::string f = ReadShared(kProbe);
  V7Map m = MapV7(f);
  const V7Map::Option* done = m.Find(0, 0);
  ASSERT_NE(done, nullptr);
  StoreAt<uint32_t>(&f, done->at + 2, 4);  // was 8: the next section's offset no longer read
  DamageRun r = RunOnDamaged("done.dat", f, "report");
  EXPECT_EQ(r.status, 65) << r.out;
  EXPECT_TRUE(Has(r.out, "error: ")) << r.out;
  EXPECT_TRUE(Has(r.out, "DONE option has size 4, not 8")) << r.out;
  EXPECT_TRUE(Has(r.out, "hint: ")) << r.out;
  EXPECT_FALSE(Has(r.out, "no kvm_exit events")) << "an empty report of a damaged file";
}

TEST(TracedatDamage, CpuSizeOfZeroKeepsTheChunksTheFileHolds) {
  std::string f = ReadShared(kProbe);
  V7Map m = MapV7(f);
  ASSERT_EQ(m.cpus.size(), 2u);
  StoreAt<uint64_t>(&f, m.cpus[1].entry_at + 12, 0);
  DamageRun r = RunOnDamaged("cpusize.dat", f, "report");
  ExpectPartial(r, "tracedat.cpu_size_mismatch");
  EXPECT_TRUE(Has(r.out, kWhole)) << "CPU 1's events were dropped: " << r.out;
}

TEST(TracedatDamage, ChunkCountOfZeroIsNotTrustedOverTheSize) {
  std::string f = ReadShared(kProbe);
  V7Map m = MapV7(f);
  ASSERT_EQ(m.cpus.size(), 2u);
  StoreAt<uint32_t>(&f, m.cpus[1].offset, 0);
  DamageRun r = RunOnDamaged("chunks.dat", f, "report");
  ExpectPartial(r, "tracedat.chunk_count_mismatch");
  EXPECT_TRUE(Has(r.out, kWhole)) << "CPU 1's events were dropped: " << r.out;
}

// trace-cmd 3.2.0 counts the 4-byte chunk count in the CPU's size (3.1.6 does not): both read whole.
TEST(TracedatDamage, ChunkCountOfZeroInATraceCmd32File) {
  const std::string rel = "hip24-vmx/host-2vcpu-6.5.dat";
  DamageRun whole = RunOnDamaged("hip-whole.dat", ReadShared(rel), "report");
  EXPECT_FALSE(Has(whole.out, "tracedat.c")) << "an undamaged file is not flagged: " << whole.out;
  std::string f = ReadShared(rel);
  V7Map m = MapV7(f);
  size_t big = 0;
  for (size_t i = 0; i < m.cpus.size(); ++i)
    if (m.cpus[i].size > m.cpus[big].size) big = i;
  StoreAt<uint32_t>(&f, m.cpus[big].offset, 0);
  DamageRun r = RunOnDamaged("hip-chunks.dat", f, "report");
  ExpectPartial(r, "tracedat.chunk_count_mismatch");
  EXPECT_TRUE(Has(r.out, "kvm_exit 22,772")) << r.out;
}

// Uncompressed copies of the probe trace by Debian's trace-cmd, so pages can be damaged in place.
std::string UncompressedProbe(const std::string& name) {
  std::string out = ::testing::TempDir() + "/exitscope-damage-" + std::to_string(getpid()) + "-" + name;
  auto conv = RunCommand("trace-cmd convert --compression none -i '" + kSharedTraces + kProbe + "' -o '" + out +
                         "' >/dev/null 2>&1");
  EXPECT_EQ(conv.status, 0) << "trace-cmd convert failed";
  std::string b = ReadFile(out);
  unlink(out.c_str());
  return b;
}

TEST(TracedatDamage, ZeroedPageIsCountedAsLost) {
  std::string f = UncompressedProbe("unc.dat");
  V7Map m = MapV7(f);
  ASSERT_EQ(m.cpus.size(), 2u);
  ASSERT_GT(m.cpus[1].size, 20u * 4096);
  f.replace(m.cpus[1].offset + 10 * 4096, 4096, std::string(4096, '\0'));
  for (const char* j : {"-j 1", "-j 2"}) {
    DamageRun r = RunOnDamaged("zero.dat", f, std::string("report ") + j);
    ExpectPartial(r, "tracedat.zeroed_page");
    EXPECT_FALSE(Has(r.out, "tracedat.timestamp_backwards")) << j << ": the zeroes are no clock step";
  }
}

// Uncompressed pages have no chunk table: the CPU's size is the only claim on where its pages end.
TEST(TracedatDamage, UncompressedCpuSizeIsCheckedAgainstThePages) {
  const std::string whole = UncompressedProbe("unc-size.dat");
  V7Map m = MapV7(whole);
  ASSERT_EQ(m.cpus.size(), 2u);
  ASSERT_EQ(m.cpus[0].size, 4096u) << "CPU 0 holds one page";
  ASSERT_EQ(m.cpus[1].offset, m.cpus[0].offset + 4096) << "CPU 1's pages follow";
  DamageRun clean = RunOnDamaged("unc-whole.dat", whole, "report");
  EXPECT_EQ(clean.status, 0) << clean.out;
  EXPECT_FALSE(Has(clean.out, "tracedat.cpu_size_mismatch")) << clean.out;
  struct Damage {
    const char* what;
    size_t cpu;
    uint64_t size;
  };
  const Damage damages[] = {{"CPU 1 of size 0", 1, 0},
                            {"CPU 1 of half its size", 1, m.cpus[1].size / 4096 / 2 * 4096},
                            {"CPU 0 running into CPU 1's pages", 0, 3 * 4096}};
  for (const Damage& d : damages) {
    std::string f = whole;
    StoreAt<uint64_t>(&f, m.cpus[d.cpu].entry_at + 12, d.size);
    for (const char* j : {"-j 1", "-j 2"}) {
      SCOPED_TRACE(std::string(d.what) + " " + j);
      DamageRun r = RunOnDamaged("unc-size.dat", f, std::string("report ") + j);
      ExpectPartial(r, "tracedat.cpu_size_mismatch");
      EXPECT_TRUE(Has(r.out, kWhole)) << "events dropped or read twice: " << r.out;
    }
  }
}

TEST(TracedatDamage, FieldOffsetBeyondTheRecordIsFlagged) {
  std::string f = UncompressedProbe("unc-field.dat");
  // kvm_exit's guest_rip at offset 96 of a 60-byte record.
  ReplaceSameLength(&f, "name: kvm_exit\n", "guest_rip;\toffset:16;", "guest_rip;\toffset:96;");
  for (const char* j : {"-j 1", "-j 2"}) {
    DamageRun r = RunOnDamaged("field.dat", f, std::string("report ") + j);
    ExpectPartial(r, "decode.field_outside_record");
  }
}

TEST(TracedatDamage, CpustatOverrunMakesThePartialTheHelpPromises) {
  std::string f = ReadShared(kProbe);
  ReplaceSameLength(&f, "CPU: 1\nentries: ", "overrun: 0", "overrun: 7");
  DamageRun r = RunOnDamaged("overrun.dat", f, "report");
  ExpectPartial(r, "tracedat.kernel_overrun");
  std::string help = ReadCommand(std::string(EXITSCOPE_BINARY) + " report --help");
  EXPECT_TRUE(Has(help, "ring-buffer overruns")) << "the help says overruns make it PARTIAL";
}

TEST(TracedatDamage, EventIdWithoutFormatIsNotQuietlySkipped) {
  std::string f = UncompressedProbe("unc-id.dat");
  // kvm_entry's records keep their id; its format now claims another one.
  ReplaceSameLength(&f, "name: kvm_entry\n", "ID: 1428", "ID: 9428");
  DamageRun dump = RunOnDamaged("id.dat", f, "dump");
  EXPECT_EQ(dump.status, 65) << "dump exits 0 on ids without a format";
  EXPECT_TRUE(Has(dump.out, "unknown_type_1428")) << "still shown, undecoded";
  EXPECT_TRUE(Has(dump.out, "decode.unknown_event_id")) << dump.out.substr(dump.out.size() - 600);
  DamageRun r = RunOnDamaged("id.dat", f, "report");
  ExpectPartial(r, "decode.unknown_event_id");
  EXPECT_FALSE(Has(r.out, "kvm_entry was not recorded")) << r.out;
}

}  // namespace
}  // namespace exitscope::testing
