// Breakdowns decoded from the exit itself (decode/exit_qualification.h): single exits built from
// the bit layouts the kernel documents, then the real traces, where an independent count of the
// trace's own kvm_exit fields (exitscope dump, and the ftrace text) is the oracle.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "decode/exit_qualification.h"
#include "test_util.h"

namespace exitscope {
namespace {

const std::string kShared = EXITSCOPE_SHARED_DIR;

ExitSample Exit(Isa isa, uint32_t reason, uint64_t info1, uint64_t info2 = 0, uint32_t intr_info = 0) {
  ExitSample s;
  s.isa = isa;
  s.reason = reason;
  s.info1 = info1;
  s.info2 = info2;
  s.intr_info = intr_info;
  return s;
}

std::vector<QualDetailText> Decode(const ExitSample& s) {
  QualDetail q[kMaxQualDetails];
  std::vector<QualDetailText> out;
  for (int i = 0, n = DecodeQualification(s, q); i < n; ++i) out.push_back(DescribeQualDetail(q[i]));
  return out;
}

TEST(ExitQualification, VmxApicWriteAndAccessNameTheRegister) {
  auto d = Decode(Exit(Isa::kVmx, 56, 0x380));  // APIC_WRITE, the TMICT offset
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, "apic");
  EXPECT_EQ(d[0].key, "0x380");
  EXPECT_EQ(d[0].name, "TMICT");
  EXPECT_EQ(d[0].access, "write");
  d = Decode(Exit(Isa::kVmx, 44, 0x10b0));  // APIC_ACCESS: linear write (type 1) of EOI
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "EOI");
  EXPECT_EQ(d[0].access, "write");
  EXPECT_EQ(ApicRegisterName(0x300), "ICR");
  EXPECT_EQ(ApicRegisterName(0x080), "TPR");
  EXPECT_EQ(ApicRegisterName(0x130), "ISR3");
  EXPECT_EQ(ApicRegisterName(0x388), "");
}

TEST(ExitQualification, KvmApicEventWinsOverTheQualification) {
  ExitSample s = Exit(Isa::kVmx, 56, 0x380);
  s.detail_count = 1;
  s.details[0].kind = EventKind::kApic;
  s.details[0].aux = 0x300;  // kvm_apic says ICR: trust the event, do not add TMICT too
  s.details[0].write = true;
  auto d = Decode(s);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].name, "ICR");
}

TEST(ExitQualification, VectorsFromIntrInfo) {
  // EXCEPTION_NMI with intr_info valid | hardware exception (3 << 8) | #PF (14).
  auto d = Decode(Exit(Isa::kVmx, 0, 0x7f000, 0, 0x80000b0e));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, "vector");
  EXPECT_EQ(d[0].name, "#PF");
  EXPECT_EQ(d[0].access, "hardware exception");
  d = Decode(Exit(Isa::kVmx, 0, 0, 0, 0x80000202));  // NMI type, vector 2
  EXPECT_EQ(d.at(0).name, "NMI");
  EXPECT_EQ(d.at(0).access, "NMI");
  d = Decode(Exit(Isa::kVmx, 1, 0, 0, 0x800000ec));  // host timer interrupt
  EXPECT_EQ(d.at(0).name, "LOCAL_TIMER");
  EXPECT_EQ(d.at(0).access, "external interrupt");
  EXPECT_TRUE(Decode(Exit(Isa::kVmx, 1, 0, 0, 0x000000ec)).empty()) << "intr_info not valid: no vector";
  d = Decode(Exit(Isa::kSvm, 0x046, 0));  // SVM UD excp
  EXPECT_EQ(d.at(0).name, "#UD");
}

TEST(ExitQualification, CrDrAndIoFromTheQualification) {
  // MOV to CR4 from rcx: cr 4, type 0, GPR 1 (bits 11:8).
  auto d = Decode(Exit(Isa::kVmx, 28, 0x104));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, "cr_exit");
  EXPECT_EQ(d[0].name, "cr4");
  EXPECT_EQ(d[0].access, "mov-to (rcx)");
  EXPECT_EQ(Decode(Exit(Isa::kVmx, 28, 0x20)).at(0).access, "clts");
  // MOV from DR7: number 7, bit 4 set = read.
  d = Decode(Exit(Isa::kVmx, 29, 0x17));
  EXPECT_EQ(d.at(0).name, "dr7");
  EXPECT_EQ(d.at(0).access, "read");
  // OUT to port 0xc044, 1 byte: the hip24 trace's IO_INSTRUCTION qualification.
  d = Decode(Exit(Isa::kVmx, 30, 0xc0440000));
  EXPECT_EQ(d.at(0).kind, "io_exit");
  EXPECT_EQ(d.at(0).key, "0xc044");
  EXPECT_EQ(d.at(0).access, "out");
  EXPECT_EQ(Decode(Exit(Isa::kVmx, 30, 0x00600039)).at(0).access, "rep ins");  // 2 bytes, in, string, rep
  // SVM IOIO: port 0x11, in (bit 0), SZ8 (bit 4).
  d = Decode(Exit(Isa::kSvm, 0x07b, 0x110011));
  EXPECT_EQ(d.at(0).key, "0x11");
  EXPECT_EQ(d.at(0).access, "in");
  // A kvm_pio detail already gives the port: not derived twice.
  ExitSample s = Exit(Isa::kVmx, 30, 0xc0440000);
  s.detail_count = 1;
  s.details[0].kind = EventKind::kPio;
  EXPECT_TRUE(Decode(s).empty());
}

TEST(ExitQualification, EptAndNpfAccessAndGpa) {
  // EPT violation, read, GVA valid + translated, not present; no kvm_page_fault: GPA unknown.
  auto d = Decode(Exit(Isa::kVmx, 48, 0x181));
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].kind, "ept");
  EXPECT_EQ(d[0].key, "-");
  EXPECT_FALSE(d[0].key_known);
  EXPECT_EQ(d[0].access, "read, not present");
  ExitSample s = Exit(Isa::kVmx, 48, 0x18a);  // write into a readable page (prot R, bit 3)
  s.detail_count = 1;
  s.details[0].kind = EventKind::kPageFault;
  s.details[0].key = 0xfee00000;
  d = Decode(s);
  EXPECT_EQ(d.at(0).key, "0xfee00000");
  EXPECT_EQ(d.at(0).access, "write, present");
  // SVM NPF: error code in info1 (write | user | reserved: an MMIO SPTE), GPA in info2.
  d = Decode(Exit(Isa::kSvm, 0x400, 0x10000000e, 0x20000));
  EXPECT_EQ(d.at(0).key, "0x20000");
  EXPECT_EQ(d.at(0).access, "write, reserved bit (MMIO)");
  EXPECT_TRUE(Decode(Exit(Isa::kVmx, 48 | 0x80000000u, 0x181)).empty()) << "failed VM entry: no qualification";
}

// The report's breakdowns on hip24 host-2vcpu (VMX, kvm_exit/kvm_entry only) equal a count of the
// trace's own kvm_exit fields as `exitscope dump` prints them.
TEST(ExitQualification, Hip24BreakdownsMatchTheTraceFields) {
  const std::string trace = kShared + "/traces/hip24-vmx/host-2vcpu-6.5.dat";
  std::istringstream dump(
      testing::ReadCommand(std::string(EXITSCOPE_BINARY) + " dump --event kvm_exit '" + trace + "'"));
  std::regex fields(R"(exit_reason=(\d+) .*info1=(0x[0-9a-f]+) .*intr_info=(\d+))");
  std::map<uint64_t, uint64_t> apic_writes, ports;
  std::map<uint32_t, uint64_t> vectors;
  std::string line;
  while (std::getline(dump, line)) {
    std::smatch m;
    if (!std::regex_search(line, m, fields)) continue;
    uint32_t reason = std::stoul(m[1]);
    uint64_t q = std::stoull(m[2], nullptr, 16);
    uint32_t intr = std::stoul(m[3]);
    if (reason == 56) ++apic_writes[q & 0xff0];
    if (reason == 30) ++ports[q >> 16];
    if (reason == 1 && (intr & 0x80000000u)) ++vectors[intr & 0xff];
  }
  ASSERT_FALSE(apic_writes.empty());
  auto r = testing::RunCommand(std::string(EXITSCOPE_BINARY) + " report --json '" + trace + "' 2>/dev/null");
  auto j = nlohmann::json::parse(r.out);
  std::map<uint64_t, uint64_t> got_apic, got_ports;
  std::map<uint32_t, uint64_t> got_vectors;
  for (const auto& d : j["details"]) {
    if (d["kind"] == "apic") got_apic[d["key"].get<uint64_t>()] += d["count"].get<uint64_t>();
    if (d["kind"] == "io_exit") got_ports[d["key"].get<uint64_t>()] += d["count"].get<uint64_t>();
    if (d["kind"] == "vector" && d["access"] == "external interrupt")
      got_vectors[d["key"].get<uint64_t>() & 0xff] += d["count"].get<uint64_t>();
  }
  EXPECT_EQ(got_apic, apic_writes);
  EXPECT_EQ(got_ports, ports);
  EXPECT_EQ(got_vectors, vectors);
  EXPECT_EQ(got_apic[0x380], 8251u) << "every APIC_WRITE of this trace writes TMICT";
  bool named = false;
  uint64_t ept = 0;
  for (const auto& d : j["details"]) {
    named |= d["kind"] == "apic" && d["name"] == "TMICT";
    if (d["kind"] == "ept") {
      EXPECT_TRUE(d["key"].is_null()) << "no kvm_page_fault recorded: the GPA is unknown, not 0";
      ept += d["count"].get<uint64_t>();
    }
  }
  EXPECT_TRUE(named);
  uint64_t ept_exits = 0;
  for (const auto& g : j["groups"])
    for (const auto& x : g["reasons"])
      if (x["reason"] == "EPT_VIOLATION") ept_exits += x["count"].get<uint64_t>();
  EXPECT_EQ(ept, ept_exits);
}

// nested-svm kvmprobe: the guest loop's DR7 reads, CR4 reads/writes and its two ports, from the SVM
// exit codes and exit_info1; the ports agree with the kvm_pio table of the same trace.
TEST(ExitQualification, NestedSvmCrDrAndNpfFromExitInfo) {
  const std::string trace = kShared + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat";
  auto r = testing::RunCommand(std::string(EXITSCOPE_BINARY) + " report --json '" + trace + "' 2>/dev/null");
  auto j = nlohmann::json::parse(r.out);
  std::map<std::string, uint64_t> rows;
  uint64_t npf_mmio = 0, npf_total = 0;
  for (const auto& d : j["details"]) {
    std::string kind = d["kind"];
    if (kind == "dr" || kind == "cr_exit")
      rows[kind + " " + d["name"].get<std::string>() + " " + d["access"].get<std::string>()] +=
          d["count"].get<uint64_t>();
    if (kind == "ept") {
      npf_total += d["count"].get<uint64_t>();
      if (d["access"].get<std::string>().find("MMIO") != std::string::npos) npf_mmio += d["count"].get<uint64_t>();
    }
    EXPECT_NE(kind, "io_exit") << "kvm_pio was recorded: ports come from it, not derived twice";
  }
  // Oracle: the trace's own reason counts (report JSON groups), one reason per row.
  std::map<std::string, uint64_t> reasons;
  for (const auto& g : j["groups"])
    for (const auto& x : g["reasons"]) reasons[x["reason"]] = x["count"].get<uint64_t>();
  EXPECT_EQ(rows["dr dr7 read"], reasons["read_dr7"]);
  EXPECT_EQ(rows["cr_exit cr4 mov-from"], reasons["read_cr4"]);
  EXPECT_EQ(rows["cr_exit cr4 mov-to"], reasons["write_cr4"]);
  EXPECT_EQ(npf_total, reasons["npf"]);
  EXPECT_EQ(npf_mmio, 399u) << "the guest's MMIO write and read at the unmapped GPA, 200 iterations, first one maps";
}

// dual-5000: one run captured at once as trace.dat, perf.data and three text renderings. The
// decoded breakdowns come from kvm_exit's own fields, so every input must give the same rows.
TEST(ExitQualification, Dual5000BreakdownsAgreeAcrossEveryInput) {
  const std::string dir = kShared + "/traces/nested-svm-6.1/dual-5000/";
  auto rows = [&](const std::string& file) {
    auto r = testing::RunCommand(std::string(EXITSCOPE_BINARY) + " report --json '" + dir + file + "' 2>/dev/null");
    std::map<std::string, uint64_t> out;
    const nlohmann::json doc = nlohmann::json::parse(r.out);
    for (const auto& d : doc["details"]) {
      std::string kind = d["kind"];
      if (kind != "apic" && kind != "vector" && kind != "dr" && kind != "cr_exit" && kind != "io_exit" && kind != "ept")
        continue;
      out[kind + " " + d["key"].dump() + " " + d["access"].get<std::string>()] += d["count"].get<uint64_t>();
    }
    return out;
  };
  auto want = rows("trace.dat");
  EXPECT_EQ(want.size(), 7u);
  EXPECT_EQ(want["dr 7 read"], 5028u);
  for (const char* f : {"perf.data", "kernel-trace.txt.gz", "trace-cmd-report.txt.gz", "perf-script.txt.gz"}) {
    EXPECT_EQ(rows(f), want) << f;
  }
}

}  // namespace
}  // namespace exitscope
