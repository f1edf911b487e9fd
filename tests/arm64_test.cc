// arm64 exits on the shared recording nested-arm64-6.1 (its README.md): one run of a tiny VMM on
// Debian's 6.1 arm64 kernel under QEMU TCG, captured at once by trace-cmd (trace.dat), perf
// (perf.data) and a tracefs instance (trace.txt, the kernel's own text, complete). On this x86 box
// Debian's trace-cmd misprints arm64 kvm events and perf kvm stat refuses the arm64 perf.data, so
// the kernel's text is the oracle: it is parsed here on its own (regexes over the TP_printk lines
// of arch/arm64/kvm/trace_arm.h, not exitscope's text reader) and every binary reading must agree.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/exit_pairer.h"
#include "decode/arm64_exit_codes.h"
#include "decode/arm64_names.h"
#include "decode/exit_reasons.h"
#include "model/event_source.h"
#include "pipeline/input_detector.h"
#include "test_util.h"

namespace exitscope {
namespace {

const std::string kDir = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-arm64-6.1/";

struct KernelLine {
  uint64_t ts_us = 0;  // the text's microseconds
  std::string event, body;
};

std::vector<KernelLine> ReadKernelText() {
  static const std::regex kLine(R"(^\s*\S+-\d+\s+\[\d+\]\s+\S+\s+(\d+)\.(\d{6}): (\w+): (.*)$)");
  std::vector<KernelLine> out;
  std::istringstream in(testing::ReadFile(kDir + "trace.txt"));
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#' || !std::regex_match(line, m, kLine)) continue;
    out.push_back({std::stoull(m[1]) * 1000000 + std::stoull(m[2]), m[3], m[4]});
  }
  return out;
}

// kvm_exit's TP_printk: "<ret>: HSR_EC: 0x<ec> (<class>), PC: 0x<pc>" (trace_arm.h). perf kvm stat
// names a TRAP by its class and any other exit by its type.
struct KernelExit {
  std::string type, ec_name, name;
  uint32_t ec = 0;
  uint64_t pc = 0;
};
KernelExit ParseKernelExit(const std::string& body) {
  static const std::regex kExit(R"(^(\w+): HSR_EC: 0x([0-9a-f]+) \((\w+)\), PC: 0x([0-9a-f]+)$)");
  std::smatch m;
  KernelExit e;
  if (!std::regex_match(body, m, kExit)) {
    ADD_FAILURE() << "kvm_exit text: " << body;
    return e;
  }
  e.type = m[1];
  e.ec = static_cast<uint32_t>(std::stoul(m[2], nullptr, 16));
  e.ec_name = m[3];
  e.pc = std::stoull(m[4], nullptr, 16);
  e.name = e.type == "TRAP" ? e.ec_name : e.type;
  return e;
}

std::map<std::string, uint64_t> KernelClassCounts(const std::vector<KernelLine>& text) {
  std::map<std::string, uint64_t> out;
  for (const auto& l : text) {
    if (l.event == "kvm_exit") ++out[ParseKernelExit(l.body).name];
  }
  return out;
}

// Every exit, timed or not, by exitscope's reason name; through the one pairer the report uses.
struct ClassCounter : ExitSampleSink {
  std::map<std::string, uint64_t> all, timed;
  std::map<std::string, uint64_t> dur_ns;
  Isa isa = Isa::kUnknown;
  void OnExitSample(const ExitSample& s) override {
    ++all[ExitReasonName(s.isa, s.reason)];
    ++timed[ExitReasonName(s.isa, s.reason)];
    dur_ns[ExitReasonName(s.isa, s.reason)] += s.dur_ns;
    isa = s.isa;
  }
  void OnUntimedExit(const ExitSample& s) override { ++all[ExitReasonName(s.isa, s.reason)]; }
};

ClassCounter CountClasses(const std::string& path) {
  ClassCounter c;
  auto src = OpenKvmEventSource(path);
  EXPECT_TRUE(src.ok()) << path;
  if (!src.ok()) return c;
  Diagnostics diag;
  ExitPairer pairer((*src)->meta(), &diag, &c);
  KvmEvent e;
  LostEvents lost;
  while ((*src)->Next(&e, &lost)) {
    if (lost.cpu >= 0) pairer.OnLost(lost), lost = LostEvents{};
    pairer.OnEvent(e);
  }
  pairer.Finish();
  return c;
}

// exitscope's own text reader (trace.txt as input) is checked against the oracle too.
TEST(Arm64Test, ClassCountsOfTraceDatAndPerfDataEqualKernelText) {
  const auto text = ReadKernelText();
  const auto want = KernelClassCounts(text);
  uint64_t exits = 0;
  for (const auto& [name, n] : want) exits += n;
  ASSERT_EQ(exits, 522u) << "README: 522 kvm_exit in trace.txt";
  ASSERT_EQ(want.at("SYS64"), 150u);
  for (const char* file : {"trace.dat", "perf.data", "trace.txt"}) {
    ClassCounter got = CountClasses(kDir + file);
    EXPECT_EQ(got.isa, Isa::kArm64) << file;
    EXPECT_EQ(got.all, want) << file;
  }
}

// `exitscope dump` line: "<s.us> <cpu> <pid> <comm> <event>: name=value …".
struct DumpLine {
  uint64_t ts_us = 0;
  std::string event;
  std::map<std::string, std::string> fields;
  int64_t Int(const std::string& k) const {
    auto it = fields.find(k);
    if (it == fields.end()) {
      ADD_FAILURE() << event << " has no field " << k;
      return -1;
    }
    return static_cast<int64_t>(std::strtoull(it->second.c_str(), nullptr, 0));
  }
};

std::vector<DumpLine> Dump(const std::string& file) {
  auto r = testing::RunCommand(std::string(EXITSCOPE_BINARY) + " dump '" + kDir + file + "' 2>/dev/null");
  EXPECT_EQ(r.status, 0) << file;
  std::vector<DumpLine> out;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string ts, cpu, pid, comm, event, kv;
    words >> ts >> cpu >> pid >> comm >> event;
    DumpLine d;
    size_t dot = ts.find('.');
    d.ts_us = std::stoull(ts.substr(0, dot)) * 1000000 + std::stoull(ts.substr(dot + 1));
    d.event = event.substr(0, event.size() - 1);  // "kvm_exit:"
    while (words >> kv) {
      size_t eq = kv.find('=');
      if (eq != std::string::npos) d.fields[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    out.push_back(std::move(d));
  }
  return out;
}

uint64_t Hex(const std::string& s) { return std::stoull(s, nullptr, 16); }

// The fields the kernel's text shows must be the fields dump decoded from the binary record.
void ExpectSameFields(const KernelLine& k, const DumpLine& d, size_t i) {
  SCOPED_TRACE("event " + std::to_string(i) + ": " + k.event + ": " + k.body);
  std::smatch m;
  if (k.event == "kvm_exit") {
    KernelExit e = ParseKernelExit(k.body);
    EXPECT_EQ(d.Int("ret"), e.type == "TRAP" ? kArmExceptionTrap : e.type == "IRQ" ? kArmExceptionIrq : -1);
    EXPECT_EQ(d.Int("esr_ec"), e.ec);
    EXPECT_EQ(static_cast<uint64_t>(d.Int("vcpu_pc")), e.pc);
  } else if (k.event == "kvm_entry") {
    EXPECT_EQ(static_cast<uint64_t>(d.Int("vcpu_pc")), Hex(k.body.substr(k.body.find("0x") + 2)));
  } else if (k.event == "kvm_sys_access") {
    static const std::regex re(R"(^PC: ([0-9a-f]+) \S+ \((\d+),(\d+),(\d+),(\d+),(\d+)\) (read|write)$)");
    ASSERT_TRUE(std::regex_match(k.body, m, re));
    EXPECT_EQ(static_cast<uint64_t>(d.Int("vcpu_pc")), Hex(m[1]));
    EXPECT_EQ(d.Int("Op0"), std::stoi(m[2]));
    EXPECT_EQ(d.Int("Op1"), std::stoi(m[3]));
    EXPECT_EQ(d.Int("CRn"), std::stoi(m[4]));
    EXPECT_EQ(d.Int("CRm"), std::stoi(m[5]));
    EXPECT_EQ(d.Int("Op2"), std::stoi(m[6]));
    EXPECT_EQ(d.Int("is_write"), m[7] == "write");
  } else if (k.event == "kvm_handle_sys_reg") {
    EXPECT_EQ(static_cast<uint64_t>(d.Int("hsr")), Hex(k.body.substr(6)));
  } else if (k.event == "kvm_hvc_arm64") {
    static const std::regex re(R"(^HVC at 0x([0-9a-f]+) \(r0: 0x([0-9a-f]+), imm: 0x([0-9a-f]+)\)$)");
    ASSERT_TRUE(std::regex_match(k.body, m, re));
    EXPECT_EQ(static_cast<uint64_t>(d.Int("vcpu_pc")), Hex(m[1]));
    EXPECT_EQ(static_cast<uint64_t>(d.Int("r0")), Hex(m[2]));
    EXPECT_EQ(static_cast<uint64_t>(d.Int("imm")), Hex(m[3]));
  } else if (k.event == "kvm_wfx_arm64") {
    EXPECT_EQ(d.Int("is_wfe"), k.body.starts_with("guest executed wfe"));
  } else if (k.event == "kvm_guest_fault") {
    static const std::regex re(R"(^ipa 0x([0-9a-f]+), hsr 0x([0-9a-f]+), hxfar 0x([0-9a-f]+), pc 0x([0-9a-f]+)$)");
    ASSERT_TRUE(std::regex_match(k.body, m, re));
    EXPECT_EQ(static_cast<uint64_t>(d.Int("ipa")), Hex(m[1]));
    EXPECT_EQ(static_cast<uint64_t>(d.Int("hsr")), Hex(m[2]));
    EXPECT_EQ(static_cast<uint64_t>(d.Int("hxfar")), Hex(m[3]));
    EXPECT_EQ(static_cast<uint64_t>(d.Int("vcpu_pc")), Hex(m[4]));
  } else if (k.event == "kvm_mmio") {
    static const std::regex re(R"(^mmio (\S+) len (\d+) gpa 0x([0-9a-f]+) val 0x([0-9a-f]+)$)");
    ASSERT_TRUE(std::regex_match(k.body, m, re));
    EXPECT_EQ(d.Int("type"), m[1] == "unsatisfied-read" ? 0 : m[1] == "read" ? 1 : 2);
    EXPECT_EQ(d.Int("len"), std::stoi(m[2]));
    EXPECT_EQ(static_cast<uint64_t>(d.Int("gpa")), Hex(m[3]));
    EXPECT_EQ(static_cast<uint64_t>(d.Int("val")), Hex(m[4]));
  } else if (k.event == "kvm_userspace_exit") {
    static const std::regex re(R"(^reason (\S+) \((\d+)\)$)");
    ASSERT_TRUE(std::regex_match(k.body, m, re));
    // "restart (4)": errno -EINTR; else the KVM_EXIT_* number.
    if (m[1] == "restart")
      EXPECT_EQ(static_cast<int32_t>(d.Int("errno")), -std::stoi(m[2]));
    else
      EXPECT_EQ(d.Int("reason"), std::stoi(m[2]));
  } else if (k.event == "kvm_timer_update_irq") {
    static const std::regex re(R"(^VCPU: (\d+), IRQ (\d+), level (\d+)$)");
    ASSERT_TRUE(std::regex_match(k.body, m, re));
    EXPECT_EQ(d.Int("vcpu_id"), std::stoi(m[1]));
    EXPECT_EQ(d.Int("irq"), std::stoi(m[2]));
    EXPECT_EQ(d.Int("level"), std::stoi(m[3]));
  }
}

// trace.dat, perf.data and the text are three buffers written by the same tracepoint calls, each
// stamping its own record (clock local; perf's sample time): under TCG the writes of one event are
// tens of µs apart, the very first ones 0.5 ms (trace.dat) and 1.4 ms (perf.data). Order and fields
// must agree exactly; a stamp within max_us, and typically (the median) within median_us.
void ExpectDumpAgrees(const char* file, uint64_t max_us, uint64_t median_us) {
  SCOPED_TRACE(file);
  const auto text = ReadKernelText();
  const auto dump = Dump(file);
  ASSERT_EQ(dump.size(), text.size());
  ASSERT_EQ(text.size(), 7798u) << "trace.txt.ringbuf-stats: 7798 entries";
  std::vector<uint64_t> diffs;
  for (size_t i = 0; i < text.size(); ++i) {
    ASSERT_EQ(dump[i].event, text[i].event) << "event " << i << " at " << text[i].ts_us;
    const uint64_t d = dump[i].ts_us > text[i].ts_us ? dump[i].ts_us - text[i].ts_us : text[i].ts_us - dump[i].ts_us;
    EXPECT_LE(d, max_us) << "event " << i;
    diffs.push_back(d);
    ExpectSameFields(text[i], dump[i], i);
  }
  std::nth_element(diffs.begin(), diffs.begin() + diffs.size() / 2, diffs.end());
  EXPECT_LE(diffs[diffs.size() / 2], median_us);
}

TEST(Arm64Test, DumpOfTraceDatAgreesWithKernelTextEventForEvent) { ExpectDumpAgrees("trace.dat", 1000, 30); }

TEST(Arm64Test, DumpOfPerfDataAgreesWithKernelTextEventForEvent) { ExpectDumpAgrees("perf.data", 2000, 100); }

nlohmann::json ReportJson(const std::string& file) {
  auto r = testing::RunCommand(std::string(EXITSCOPE_BINARY) + " report --json '" + kDir + file + "' 2>/dev/null");
  EXPECT_EQ(r.status, 0) << file;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// The kernel text's own pairing: each exit to the next kvm_entry of the thread (one vCPU thread
// here), with the detail lines in between; an exit without an entry is not timed.
struct TextExit {
  std::string name;
  uint64_t dur_us = 0;
  bool timed = false;
  std::vector<const KernelLine*> details;
};
std::vector<TextExit> PairKernelText(const std::vector<KernelLine>& text) {
  std::vector<TextExit> out;
  uint64_t exit_us = 0;
  bool open = false;
  for (const auto& l : text) {
    if (l.event == "kvm_exit") {
      out.push_back({ParseKernelExit(l.body).name, 0, false, {}});
      exit_us = l.ts_us;
      open = true;
    } else if (l.event == "kvm_entry" && open) {
      out.back().timed = true;
      out.back().dur_us = l.ts_us - exit_us;
      open = false;
    } else if (open) {
      out.back().details.push_back(&l);
    }
  }
  return out;
}

TEST(Arm64Test, ReportShowsHandlingTimesPerClassAsTheTextPairsThem) {
  const auto text = ReadKernelText();  // the pairs point into it
  const auto exits = PairKernelText(text);
  std::map<std::string, std::pair<uint64_t, uint64_t>> want;  // class -> (timed, summed µs)
  for (const auto& e : exits) {
    if (!e.timed) continue;
    ++want[e.name].first;
    want[e.name].second += e.dur_us;
  }
  for (const char* file : {"trace.dat", "perf.data"}) {
    SCOPED_TRACE(file);
    nlohmann::json j = ReportJson(file);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["context"]["isa"], "arm64");
    std::map<std::string, std::pair<uint64_t, double>> got;
    for (const auto& r : j["groups"][0]["reasons"]) {
      ASSERT_FALSE(r["mean_ns"].is_null()) << r["reason"];
      // Handling plus blocked time is the exit's whole exit -> entry time, as the text pairs it.
      double whole_ns = r["total_ns"].get<double>() + r["blocked_ns"].get<double>();
      got[r["reason"]] = {r["timed_count"].get<uint64_t>(), whole_ns};
    }
    ASSERT_EQ(got.size(), want.size());
    for (const auto& [name, w] : want) {
      ASSERT_TRUE(got.count(name)) << name;
      EXPECT_EQ(got[name].first, w.first) << name;
      double want_mean_us = static_cast<double>(w.second) / w.first;
      double got_mean_us = got[name].second / 1000.0 / w.first;
      // Text stamps are µs; the buffers stamp each event apart by µs to tens of µs (above), the first
      // exit (IABT_LOW, alone in its class) by 0.1 ms in perf.data.
      EXPECT_NEAR(got_mean_us, want_mean_us, std::max(15.0, 0.02 * want_mean_us)) << name;
    }
  }
}

TEST(Arm64Test, BreakdownsCountWhatTheTextShowsInsideTimedExits) {
  // Detail rows cover the timed exits (an untimed exit's details may be partial).
  std::map<std::string, uint64_t> sysreg, hvc, wfx, mmio, fault;
  const auto text = ReadKernelText();  // the pairs point into it
  for (const auto& e : PairKernelText(text)) {
    if (!e.timed) continue;
    for (const KernelLine* l : e.details) {
      std::smatch m;
      if (l->event == "kvm_sys_access") {
        static const std::regex re(R"(^PC: \S+ SYS_(\S+) \S+ (read|write)$)");
        ASSERT_TRUE(std::regex_match(l->body, m, re)) << l->body;
        ++sysreg[std::string(m[1]) + " " + std::string(m[2])];
      } else if (l->event == "kvm_hvc_arm64") {
        ++hvc[l->body.substr(l->body.find("r0: ") + 4, 18)];
      } else if (l->event == "kvm_wfx_arm64") {
        ++wfx[l->body.substr(15, 3)];  // "guest executed wfi at: …"
      } else if (l->event == "kvm_mmio") {
        static const std::regex re(R"(^mmio (\S+) len \d+ gpa (0x[0-9a-f]+) .*$)");
        ASSERT_TRUE(std::regex_match(l->body, m, re));
        ++mmio[std::string(m[2]) + " " + std::string(m[1])];
      } else if (l->event == "kvm_guest_fault") {
        ++fault[l->body.substr(4, l->body.find(',') - 4)];
      }
    }
  }
  ASSERT_FALSE(sysreg.empty());
  nlohmann::json j = ReportJson("trace.dat");
  std::map<std::string, uint64_t> got_sysreg, got_hvc, got_wfx, got_mmio, got_fault;
  for (const auto& d : j["details"]) {
    const std::string kind = d["kind"], name = d["name"], access = d["access"];
    const uint64_t n = d["count"], key = d["key"];
    if (kind == "sysreg") got_sysreg[name + " " + access] += n;
    if (kind == "hvc") got_hvc[fmt::format("0x{:016x}", key)] += n;
    if (kind == "wfx") got_wfx[name == "WFI" ? "wfi" : "wfe"] += n;
    if (kind == "mmio") got_mmio[fmt::format("{:#x} {}", key, access)] += n;
    if (kind == "guest_fault") got_fault[fmt::format("{:#x}", key)] += n;
  }
  EXPECT_EQ(got_sysreg, sysreg);
  EXPECT_EQ(got_hvc, hvc);
  EXPECT_EQ(got_wfx, wfx);
  EXPECT_EQ(got_mmio, mmio);
  EXPECT_EQ(got_fault, fault);
  // PSCI by name from r0 (uapi/linux/psci.h): the loop's PSCI_VERSION calls.
  bool psci_version = false;
  for (const auto& d : j["details"]) psci_version |= d["kind"] == "hvc" && d["name"] == "PSCI_VERSION";
  EXPECT_TRUE(psci_version);
  EXPECT_EQ(j["totals"]["arm64_irq_events"]["kvm_timer_update_irq"], 913);
}

TEST(Arm64Test, ReasonFilterTakesArm64NamesAndRefusesX86Ones) {
  const std::string bin = std::string(EXITSCOPE_BINARY) + " report --json --reason ";
  auto sys = testing::RunCommand(bin + "SYS64 '" + kDir + "trace.dat' 2>/dev/null");
  ASSERT_EQ(sys.status, 0);
  nlohmann::json j = nlohmann::json::parse(sys.out, nullptr, false);
  ASSERT_EQ(j["groups"][0]["reasons"].size(), 1u);
  EXPECT_EQ(j["groups"][0]["reasons"][0]["count"], 150);
  // An x86 name on an arm64 trace is a usage error (64) naming the trace's ISA, not an empty report.
  auto ept = testing::RunCommand(bin + "EPT_VIOLATION '" + kDir + "trace.dat' 2>&1");
  EXPECT_EQ(ept.status, 64);
  EXPECT_NE(ept.out.find("this trace is arm64"), std::string::npos) << ept.out;
}

TEST(Arm64Test, ExceptionClassNamesAsEsrAndPerfSpellThem) {
  EXPECT_EQ(ExitReasonName(Isa::kArm64, Arm64ExitKey(kArmExceptionTrap, 0x18)), "SYS64");
  EXPECT_EQ(ExitReasonName(Isa::kArm64, Arm64ExitKey(kArmExceptionTrap, 0x24)), "DABT_LOW");
  EXPECT_EQ(ExitReasonName(Isa::kArm64, Arm64ExitKey(kArmExceptionTrap, 0x01)), "WFx");
  EXPECT_EQ(ExitReasonName(Isa::kArm64, Arm64ExitKey(kArmExceptionTrap, 0x3c)), "BRK64");
  // An IRQ exit is named by its type whatever stale class esr_ec holds; so is the SError-bit form.
  EXPECT_EQ(ExitReasonName(Isa::kArm64, Arm64ExitKey(kArmExceptionIrq, 0x18)), "IRQ");
  EXPECT_EQ(ExitReasonName(Isa::kArm64, Arm64ExitKey(kArmExceptionTrap | kArmExitWithSerrorBit, 0x16)), "HVC64");
  EXPECT_EQ(ExitReasonName(Isa::kArm64, Arm64ExitKey(kArmExceptionIl, 0)), "ILLEGAL");
  EXPECT_EQ(ExitReasonName(Isa::kArm64, Arm64ExitKey(kArmExceptionHypGone, 0)), "HYP_GONE");
  // Unallocated classes are kept, by number.
  EXPECT_EQ(ExitReasonName(Isa::kArm64, Arm64ExitKey(kArmExceptionTrap, 0x2e)), "UNKNOWN(0x2e)");
  EXPECT_EQ(ExitReasonFromName(Isa::kArm64, "UNKNOWN(0x2e)"), 0x2eu);
  EXPECT_EQ(ExitReasonFromName(Isa::kArm64, "dabt_low"), 0x24u);
  EXPECT_EQ(IsaFromReasonName("SYS64"), Isa::kArm64);
  ReasonCodes irq = ReasonCodesFromName("IRQ");
  EXPECT_TRUE(irq.Matches(Isa::kArm64, kArm64ExitIrq));
  EXPECT_FALSE(irq.Matches(Isa::kArm64, kEsrEcSys64));
}

TEST(Arm64Test, SysRegFromKvmHandleSysRegEsrNamesTheTextsRegister) {
  // trace.txt: "kvm_handle_sys_reg: HSR 0x6230006f" then "kvm_sys_access: … SYS_ID_AA64MMFR0_EL1
  // (3,0,0,7,0) read"; "HSR 0x623207e0" … "SYS_ACTLR_EL1 (3,0,1,0,1) write".
  EXPECT_EQ(Arm64SysRegName(SysRegFromEsr(0x6230006f)), "ID_AA64MMFR0_EL1");
  EXPECT_TRUE(SysRegEsrIsRead(0x6230006f));
  EXPECT_EQ(Arm64SysRegTuple(SysRegFromEsr(0x623207e0)), "(3,0,1,0,1)");
  EXPECT_FALSE(SysRegEsrIsRead(0x623207e0));
  EXPECT_EQ(Arm64SysRegName(SysRegFromEsr(0x62141ffc)), "DC_CISW");
  EXPECT_EQ(Arm64SysRegName(SysRegEncoding(3, 3, 14, 9, 3)), "PMEVCNTR11_EL0");
  EXPECT_TRUE(IsArm64PmuSysReg(SysRegEncoding(3, 3, 9, 12, 0)));
  EXPECT_TRUE(IsArm64TimerSysReg(SysRegEncoding(3, 3, 14, 2, 1)));
  EXPECT_FALSE(IsArm64TimerSysReg(SysRegEncoding(3, 3, 14, 9, 3)));
  EXPECT_EQ(Arm64SysRegGenericName(SysRegEncoding(3, 7, 15, 2, 0)), "S3_7_C15_C2_0");
  EXPECT_EQ(Arm64HvcFunctionName(0x84000008), "PSCI_SYSTEM_OFF");
  EXPECT_EQ(Arm64HvcFunctionName(0xc4000003), "PSCI_CPU_ON64");
  EXPECT_EQ(FaultAccessFromEsr(0x93d68046), Arm64FaultAccess::kWrite);  // the MMIO write's DABT
  EXPECT_EQ(FaultAccessFromEsr(0x93c48006), Arm64FaultAccess::kRead);
  EXPECT_EQ(FaultAccessFromEsr(0x82000005), Arm64FaultAccess::kFetch);
}

}  // namespace
}  // namespace exitscope
