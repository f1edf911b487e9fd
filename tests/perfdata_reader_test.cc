// perf.data reader on real recordings: per-event sample counts, time order, thread names and header
// features, checked against what perf itself reported for the same files (dual-5000/README.md,
// `perf report --stats`, `perf report --header-only`).
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "sources/perfdata_reader.h"
#include "sources/perfdata_stream.h"

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
