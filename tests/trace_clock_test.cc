// Clocks as a user meets them: which unit each trace-cmd clock gives, how --tsc-khz converts TSC
// cycles, what the report, dump and advise print for times that are not ns, and that a trace's
// duration covers every record. Where no real trace of a clock exists, the real pages of
// nested-svm-6.1/kvmprobe-200.trace.dat (recorded with clock global, so the raw stamps are ns) are
// written again with another clock name or option: the expected numbers then follow from the
// original report's (e.g. read as x86-tsc at 1 GHz they are the same; at 2 GHz half).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>

#include "sources/trace_clock.h"
#include "test_util.h"
#include "tracedat_extract.h"

namespace exitscope {
namespace {

using nlohmann::json;

const std::string kShared = EXITSCOPE_SHARED_DIR;
const std::string kProbe = kShared + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat";
const std::string kHip24 = kShared + "/traces/hip24-vmx/host-2vcpu-6.5.dat";

// trace.dat.v7 option ids (trace-cmd.dat.v7.5.txt).
constexpr uint16_t kOptTimeShift = 12, kOptTsc2Nsec = 14;

testing::CommandResult Cli(const std::string& args, bool with_stderr = false) {
  return testing::RunCommand(std::string(EXITSCOPE_BINARY) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null"));
}

json ReportJson(const std::string& args) {
  auto r = Cli("report --json " + args);
  EXPECT_TRUE(r.status == 0 || r.status == 65) << args << ": rc " << r.status;
  return json::parse(r.out, nullptr, false);
}

struct ReasonTimes {
  uint64_t timed = 0;
  double mean = 0, total = 0;
};
std::map<std::string, ReasonTimes> Reasons(const json& doc) {
  std::map<std::string, ReasonTimes> out;
  for (const auto& r : doc["groups"][0]["reasons"]) {
    out[r["reason"]] = {r["timed_count"].get<uint64_t>(), r["mean_ns"].get<double>(), r["total_ns"].get<double>()};
  }
  return out;
}

std::string Le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>(v >> (8 * i)));
  return s;
}

class RewrittenClockTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(kProbe)) return;
    original_ = new testing::Extracted(testing::Extract(testing::ReadFile(kProbe)));
    original_report_ = new json(ReportJson(kProbe));
  }
  static void TearDownTestSuite() {
    delete original_;
    delete original_report_;
  }
  void SetUp() override {
    if (!original_) GTEST_SKIP() << kProbe << " missing";
  }
  void TearDown() override {
    for (const auto& p : written_) std::filesystem::remove(p);
  }

  // The original's pages under `clock` (BUFFER clock and trace_clock text) plus `options`.
  std::string Write(const std::string& clock, std::vector<std::pair<uint16_t, std::string>> options = {}) {
    TraceDatMeta m = original_->meta;
    m.clock = clock;
    m.trace_clock = "local global counter uptime perf mono mono_raw boot tai x86-tsc [" + clock + "]";
    m.extra_options = std::move(options);
    std::string path = (std::filesystem::temp_directory_path() / ("exitscope-clock-" + std::to_string(::getpid()) +
                                                                  "-" + std::to_string(written_.size()) + ".dat"))
                           .string();
    auto w = TraceDatWriter::Create(path, m);
    EXPECT_TRUE(w.ok());
    if (!w.ok()) return path;
    for (uint32_t cpu = 0; cpu < original_->cpu_pages.size(); ++cpu) {
      const std::string& p = original_->cpu_pages[cpu];
      if (!p.empty()) {
        EXPECT_TRUE((*w)->AddPages(cpu, {reinterpret_cast<const uint8_t*>(p.data()), p.size()}).ok());
      }
    }
    EXPECT_TRUE((*w)->Finish(original_->cpustats).ok());
    written_.push_back(path);
    return path;
  }

  static inline testing::Extracted* original_ = nullptr;
  static inline json* original_report_ = nullptr;
  std::vector<std::string> written_;
};

// -C x86-tsc without TSC2NSEC: the numbers are cycles, and every output says so.
TEST_F(RewrittenClockTest, X86TscWithoutConversionIsReportedInCycles) {
  std::string f = Write("x86-tsc");
  json doc = ReportJson(f);
  EXPECT_EQ(doc["context"]["time_unit"], "cycles");
  EXPECT_EQ(doc["context"]["clock"], "x86-tsc");
  ASSERT_EQ(doc["context"]["clock_notes"].size(), 1u);
  // The raw stamps are what they were (ns in truth): the cycle counts equal the original's ns.
  auto want = Reasons(*original_report_), got = Reasons(doc);
  ASSERT_FALSE(want.empty());
  for (const auto& [reason, w] : want) {
    EXPECT_EQ(got[reason].timed, w.timed) << reason;
    EXPECT_EQ(got[reason].mean, w.mean) << reason;
  }
  std::string text = Cli("report " + f).out;
  EXPECT_NE(text.find("  warning: clock x86-tsc: times are TSC cycles, not ns (no TSC2NSEC option); pass --tsc-khz"),
            std::string::npos)
      << text;
  // No time unit anywhere in the table or the duration: cycles with SI prefixes.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(text, m, std::regex("\n  duration ([^ ]+) ")));
  EXPECT_TRUE(m[1].str().ends_with("cyc")) << m[1];
  std::string table = text.substr(text.find("REASON"), text.find("\n\n", text.find("REASON")) - text.find("REASON"));
  EXPECT_EQ(std::regex_search(table, std::regex("[0-9](ns|us|ms|s)\\b")), false) << table;
  EXPECT_NE(table.find("kcyc"), std::string::npos) << table;
}

// --tsc-khz converts: at 1 GHz one cycle is one ns (the original back), at 2 GHz half of it.
TEST_F(RewrittenClockTest, TscKhzConvertsCyclesToNs) {
  std::string f = Write("x86-tsc");
  auto want = Reasons(*original_report_);
  for (double khz : {1000000.0, 2000000.0, 2399998.0}) {
    json doc = ReportJson("--tsc-khz " + std::to_string(static_cast<uint64_t>(khz)) + " " + f);
    EXPECT_EQ(doc["context"]["time_unit"], "ns");
    EXPECT_EQ(doc["context"]["clock_notes"].size(), 0u) << doc["context"]["clock_notes"];
    EXPECT_NE(doc["context"]["clock"].get<std::string>().find("--tsc-khz"), std::string::npos);
    const double scale = 1e6 / khz;
    auto got = Reasons(doc);
    for (const auto& [reason, w] : want) {
      EXPECT_EQ(got[reason].timed, w.timed) << reason;
      EXPECT_NEAR(got[reason].total, w.total * scale, w.total * 1e-6 + got[reason].timed) << reason << " " << khz;
    }
    EXPECT_NEAR(doc["context"]["duration_ns"].get<double>(),
                (*original_report_)["context"]["duration_ns"].get<double>() * scale, 2.0);
  }
  // The same conversion in every command: dump's first stamp and the sliced reader's report.
  std::string first_ns = Cli("dump -n 1 --ns " + kProbe).out.substr(0, 12);
  EXPECT_EQ(Cli("dump -n 1 --ns --tsc-khz 1000000 " + f).out.substr(0, 12), first_ns);
  EXPECT_EQ(Reasons(ReportJson("-j 2 --tsc-khz 1000000 " + f))["hlt"].mean, want["hlt"].mean);
}

// The TSC2NSEC option (trace-cmd -C tsc2nsec) converts with its own mult/shift; --tsc-khz then only
// gets a note.
TEST_F(RewrittenClockTest, Tsc2NsecOptionIsAppliedAndWinsOverTscKhz) {
  std::string opt = Le(1, 4) + Le(1, 4) + Le(0, 8);  // ns = ts * 1 >> 1
  std::string f = Write("tsc2nsec", {{kOptTsc2Nsec, opt}});
  json doc = ReportJson("--tsc-khz 3000000 " + f);
  EXPECT_EQ(doc["context"]["time_unit"], "ns");
  EXPECT_EQ(doc["context"]["clock"], "tsc2nsec");
  ASSERT_EQ(doc["context"]["clock_notes"].size(), 1u);
  EXPECT_NE(doc["context"]["clock_notes"][0].get<std::string>().find("--tsc-khz ignored"), std::string::npos);
  auto want = Reasons(*original_report_), got = Reasons(doc);
  for (const auto& [reason, w] : want) EXPECT_NEAR(got[reason].total, w.total / 2, got[reason].timed) << reason;
}

TEST_F(RewrittenClockTest, CounterUptimeAndUnknownClocks) {
  json counter = ReportJson(Write("counter"));
  EXPECT_EQ(counter["context"]["time_unit"], "count");
  std::string text = Cli("report " + written_.back()).out;
  EXPECT_NE(text.find("warning: clock counter: timestamps count trace events, they are not time"), std::string::npos);
  EXPECT_NE(text.find("cnt"), std::string::npos);
  EXPECT_NE(Cli("report --tsc-khz 1000000 " + written_.back()).out.find("--tsc-khz ignored: clock counter"),
            std::string::npos);

  // uptime counts jiffies at USER_HZ 100: converted to ns (x 10 ms), with a warning.
  json uptime = ReportJson(Write("uptime"));
  EXPECT_EQ(uptime["context"]["time_unit"], "ns");
  EXPECT_EQ(uptime["context"]["duration_ns"].get<uint64_t>(),
            (*original_report_)["context"]["duration_ns"].get<uint64_t>() * 10000000);
  EXPECT_NE(uptime["context"]["clock_notes"][0].get<std::string>().find("jiffies"), std::string::npos);

  json unknown = ReportJson(Write("hyperv-tsc"));
  EXPECT_EQ(unknown["context"]["time_unit"], "unknown");
  EXPECT_NE(Cli("report " + written_.back()).out.find("kraw"), std::string::npos);
}

// TIME_SHIFT (guest↔host sync) is not applied: a counter and a line in the report say so.
TEST_F(RewrittenClockTest, TimeShiftNotAppliedIsSaid) {
  std::string shift = Le(0x1234, 8) + Le(0, 4) + Le(0, 4);  // peer trace id, flags, 0 CPUs
  std::string f = Write("local", {{kOptTimeShift, shift}});
  json doc = ReportJson(f);
  EXPECT_EQ(doc["context"]["time_unit"], "ns");
  ASSERT_EQ(doc["context"]["clock_notes"].size(), 1u);
  EXPECT_NE(doc["context"]["clock_notes"][0].get<std::string>().find("TIME_SHIFT"), std::string::npos);
  bool counted = false;
  for (const auto& d : doc["diagnostics"]) counted |= d["name"] == "tracedat.time_shift_ignored";
  EXPECT_TRUE(counted);
  EXPECT_EQ(Reasons(doc)["hlt"].mean, Reasons(*original_report_)["hlt"].mean);
}

// Commands that need ns refuse cycles with a hint; dump prints the raw integers.
TEST_F(RewrittenClockTest, CommandsNeedingNsRefuseCyclesDumpPrintsRaw) {
  std::string f = Write("x86-tsc");
  auto advise = Cli("advise " + f, true);
  EXPECT_EQ(advise.status, 64) << advise.out;
  EXPECT_NE(advise.out.find("hint: pass --tsc-khz"), std::string::npos) << advise.out;
  EXPECT_EQ(Cli("advise --tsc-khz 1000000 " + f).status, 0);
  auto window = Cli("report --from 0.01 " + f, true);
  EXPECT_EQ(window.status, 64) << window.out;
  EXPECT_NE(window.out.find("--from/--to needs times in ns"), std::string::npos) << window.out;
  EXPECT_EQ(Cli("report --from 0.01 --tsc-khz 1000000 " + f).status, 0);
  EXPECT_EQ(Cli("report --tsc-khz 5 " + f).status, 64);  // 5 kHz: a typo for MHz or GHz

  std::string dump = Cli("dump -n 1 " + f).out;
  EXPECT_TRUE(std::regex_search(dump, std::regex("^[0-9]+ 00[01] "))) << dump;  // no decimal point
  std::string ns_dump = Cli("dump -n 1 --ns " + kProbe).out;
  std::string digits = ns_dump.substr(0, ns_dump.find(' '));
  digits.erase(digits.find('.'), 1);
  EXPECT_EQ(dump.substr(0, dump.find(' ')), std::to_string(std::stoull(digits)));
  std::string j = Cli("dump -n 1 --json " + f).out;
  EXPECT_NE(j.find("\"ts_cycles\":"), std::string::npos) << j;
  EXPECT_EQ(j.find("\"ts_ns\""), std::string::npos) << j;
}

// The real traces keep their ns: hip24 was recorded with -C tsc2nsec and carries TSC2NSEC (a
// --tsc-khz given by habit changes nothing), the nested traces use global and local.
TEST(TraceClocks, RealTracesStayInNs) {
  if (!std::filesystem::exists(kHip24)) GTEST_SKIP() << kHip24;
  json plain = ReportJson(kHip24), khz = ReportJson("--tsc-khz 2400000 " + kHip24);
  EXPECT_EQ(plain["context"]["time_unit"], "ns");
  EXPECT_EQ(plain["context"]["clock"], "tsc2nsec");
  EXPECT_EQ(plain["context"]["clock_notes"].size(), 0u);
  EXPECT_EQ(plain["groups"], khz["groups"]);
  EXPECT_NE(khz["context"]["clock_notes"][0].get<std::string>().find("--tsc-khz ignored"), std::string::npos);
  for (const char* t : {"nested-svm-6.1/kvmprobe-200.trace.dat", "nested-arm64-6.1/trace.dat",
                        "nested-svm-6.1/kvmprobe-200.perf.data", "nested-svm-6.1/kvmprobe-200.ftrace.txt"}) {
    json doc = ReportJson(kShared + "/traces/" + t);
    EXPECT_EQ(doc["context"]["time_unit"], "ns") << t;
    EXPECT_EQ(doc["context"]["clock_notes"].size(), 0u) << t;
  }
  // v6: the clock is the "[tsc2nsec]" text after the CPU table; no TSC2NSEC option, so cycles.
  json v6 = ReportJson(kShared + "/traces/hip24-vmx/v6-no-events.dat");
  EXPECT_EQ(v6["context"]["clock"], "tsc2nsec");
  EXPECT_EQ(v6["context"]["time_unit"], "cycles");
}

// trace-cmd converts to v6, which keeps the clock after the flyrecord CPU table.
TEST(TraceClocks, V6ClockTextIsRead) {
  if (testing::RunCommand("command -v trace-cmd >/dev/null").status != 0) GTEST_SKIP() << "no trace-cmd";
  std::string v6 =
      (std::filesystem::temp_directory_path() / ("exitscope-v6-" + std::to_string(::getpid()) + ".dat")).string();
  auto conv =
      testing::RunCommand("trace-cmd convert --file-version 6 -i '" + kProbe + "' -o '" + v6 + "' >/dev/null 2>&1");
  if (conv.status != 0) GTEST_SKIP() << "trace-cmd convert failed";
  json doc = ReportJson(v6);
  std::filesystem::remove(v6);
  EXPECT_EQ(doc["context"]["format"], "trace.dat v6");
  EXPECT_EQ(doc["context"]["clock"], "global");
  EXPECT_EQ(doc["context"]["time_unit"], "ns");
}

// Text whose stamps are integers (how the kernel and trace-cmd print x86-tsc): unit unknown; with
// --tsc-khz they are cycles. Made from the trace-cmd report text by printing its µs as integers,
// so at --tsc-khz 1000 (one cycle = 1 µs) the report equals the original's.
TEST(TraceClocks, IntegerTextTimestampsAreRawUntilTscKhz) {
  std::string orig = kShared + "/traces/nested-svm-6.1/kvmprobe-200.trace-cmd-report.txt";
  if (!std::filesystem::exists(orig)) GTEST_SKIP() << orig;
  std::string text = testing::ReadFile(orig);
  std::string raw = std::regex_replace(text, std::regex("\\] +([0-9]+)\\.([0-9]{6}):"), "] $1$2:");
  ASSERT_NE(raw, text);
  std::string path =
      (std::filesystem::temp_directory_path() / ("exitscope-raw-" + std::to_string(::getpid()) + ".txt")).string();
  ASSERT_TRUE(testing::WriteFile(path, raw));
  json want = ReportJson(orig), unknown = ReportJson(path), khz = ReportJson("--tsc-khz 1000 " + path);
  std::filesystem::remove(path);
  EXPECT_EQ(unknown["context"]["time_unit"], "unknown");
  EXPECT_NE(unknown["context"]["clock_notes"][0].get<std::string>().find("plain integers"), std::string::npos);
  EXPECT_EQ(khz["context"]["time_unit"], "ns");
  EXPECT_EQ(khz["groups"], want["groups"]);
  EXPECT_EQ(khz["context"]["duration_ns"], want["context"]["duration_ns"]);
}

// A text whose lines print their stamps both ways cannot be timed as one: the lines unlike the first
// are counted and skipped (the result is PARTIAL), never mixed as seconds and integers.
TEST(TraceClocks, MixedTextTimestampFormsAreCountedNotMixed) {
  std::string orig = kShared + "/traces/nested-svm-6.1/kvmprobe-200.trace-cmd-report.txt";
  if (!std::filesystem::exists(orig)) GTEST_SKIP() << orig;
  std::string text = testing::ReadFile(orig);
  // Every line after the first 1,000 as integers: those are the ones skipped.
  size_t cut = 0;
  for (int i = 0; i < 1000 && cut != std::string::npos; ++i) cut = text.find('\n', cut + 1);
  ASSERT_NE(cut, std::string::npos);
  std::string tail = text.substr(cut);
  std::string mixed =
      text.substr(0, cut) + std::regex_replace(tail, std::regex("\\] +([0-9]+)\\.([0-9]{6}):"), "] $1$2:");
  std::string path =
      (std::filesystem::temp_directory_path() / ("exitscope-mixed-" + std::to_string(::getpid()) + ".txt")).string();
  ASSERT_TRUE(testing::WriteFile(path, mixed));
  auto r = Cli("report --json " + path);
  std::filesystem::remove(path);
  EXPECT_EQ(r.status, 65);
  json doc = json::parse(r.out, nullptr, false);
  EXPECT_EQ(doc["context"]["time_unit"], "ns");
  uint64_t skipped = 0;
  for (const auto& d : doc["diagnostics"]) {
    if (d["name"] == "text.mixed_timestamp_forms") skipped = d["count"];
  }
  const std::regex stamp("\\] +[0-9]+\\.[0-9]{6}:");
  size_t lines = std::distance(std::sregex_iterator(tail.begin(), tail.end(), stamp), std::sregex_iterator());
  EXPECT_GT(lines, 1000u);
  EXPECT_EQ(skipped, lines);
  EXPECT_LT(doc["totals"]["kvm_exit"].get<uint64_t>(), ReportJson(orig)["totals"]["kvm_exit"].get<uint64_t>());
}

// The duration is the span of every record, not only of kvm events: a trace of sched events only
// (tests/data/sched-pipe.perf.data, 286 samples) spans what perf script prints.
TEST(TraceClocks, DurationCoversRecordsThatAreNotKvmEvents) {
  std::string script = testing::ReadFile(std::string(EXITSCOPE_TESTDATA_DIR) + "/sched-pipe.perf-script.txt");
  std::regex ts(" ([0-9]+)\\.([0-9]{6}): ");
  uint64_t first = UINT64_MAX, last = 0;
  for (auto it = std::sregex_iterator(script.begin(), script.end(), ts); it != std::sregex_iterator(); ++it) {
    uint64_t us = std::stoull((*it)[1]) * 1000000 + std::stoull((*it)[2]);
    first = std::min(first, us);
    last = std::max(last, us);
  }
  ASSERT_GT(last, first);
  json doc = ReportJson(std::string(EXITSCOPE_TESTDATA_DIR) + "/sched-pipe.perf.data");
  EXPECT_EQ(doc["totals"]["events"], 0);
  EXPECT_NEAR(doc["context"]["duration_ns"].get<double>() / 1000, static_cast<double>(last - first), 1.0);
  std::string text = Cli("report " + std::string(EXITSCOPE_TESTDATA_DIR) + "/sched-pipe.perf.data").out;
  char want[64];
  std::snprintf(want, sizeof want, "duration %.3f s", static_cast<double>(last - first) * 1e-6);
  EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
}

TEST(TraceClocks, PlanPerClock) {
  for (const char* c : {"local", "global", "perf", "mono", "mono_raw", "boot", "tai", ""}) {
    ClockPlan p = PlanClock(c, 0, 0, {});
    EXPECT_EQ(p.unit, TimeUnit::kNs) << c;
    EXPECT_EQ(p.mult, 0u) << c;
    EXPECT_TRUE(p.notes.empty()) << c;
  }
  EXPECT_EQ(PlanClock("x86-tsc", 0, 0, {}).unit, TimeUnit::kCycles);
  EXPECT_EQ(PlanClock("tsc2nsec", 0, 0, {}).unit, TimeUnit::kCycles);
  EXPECT_EQ(PlanClock("counter", 0, 0, {2400000}).unit, TimeUnit::kCount);
  EXPECT_EQ(PlanClock("x86-tsc", 0, 0, {2400000}).unit, TimeUnit::kNs);
  ClockPlan file = PlanClock("x86-tsc", 5, 3, {2400000});
  EXPECT_EQ(file.mult, 5u);
  EXPECT_EQ(file.shift, 3u);
  EXPECT_EQ(file.label, "x86-tsc (tsc2nsec)");
  // --tsc-khz: 2.4e9 cycles at 2.4 GHz are one second, to the ns, even far into the TSC's range.
  ClockPlan khz = PlanClock("x86-tsc", 0, 0, {2400000});
  EXPECT_EQ(khz.ToNs(2400000000ull), 1000000000ull);
  EXPECT_NEAR(static_cast<double>(khz.ToNs(2400000000ull * 100000)), 1e14, 1e14 * 1e-9);
  EXPECT_EQ(PlanClock("x86-tsc", 0, 0, {1000000}).ToNs(123456789), 123456789u);
}

}  // namespace
}  // namespace exitscope
