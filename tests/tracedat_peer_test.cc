// Peer test: our trace.dat reader against `trace-cmd report` (Debian 3.1.6) on the same files, line by
// line over the whole file: same events in the same order, same timestamp (µs, as trace-cmd rounds),
// CPU, pid, and every field value trace-cmd shows for kvm events (kvm plugin dialect included).
#include <gtest/gtest.h>
#include <zlib.h>

#include <charconv>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "pipeline/input_detector.h"

namespace exitscope {
namespace {

const std::string kSvm = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/";

std::vector<std::string> ReadLines(const std::string& path) {
  std::vector<std::string> lines;
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files too
  if (!f) return lines;
  std::string cur;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) {
    for (int i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        lines.push_back(std::move(cur));
        cur.clear();
      } else
        cur.push_back(buf[i]);
    }
  }
  gzclose(f);
  return lines;
}

std::vector<std::string> Tokens(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ' ' || c == ',' || c == '=' || c == ':' || c == '(' || c == ')' || c == '\t') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

uint64_t Num(std::string s, int base) {
  if (s.starts_with("0x")) {
    s = s.substr(2);
    base = 16;
  }
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v, base);
  EXPECT_TRUE(ec == std::errc() && p == s.data() + s.size()) << "not a number: " << s;
  return v;
}

// arch/x86/include/uapi/asm/svm.h exit codes for the names libtraceevent's kvm plugin prints.
const std::map<std::string, uint32_t> kSvmExitCodes = {
    {"EXIT_READ_CR4", 0x004}, {"EXIT_WRITE_CR4", 0x014}, {"EXIT_READ_DR7", 0x027}, {"EXIT_WRITE_DR7", 0x037},
    {"EXIT_INTR", 0x060},     {"EXIT_CPUID", 0x072},     {"EXIT_HLT", 0x078},      {"EXIT_IOIO", 0x07b},
    {"EXIT_MSR", 0x07c},      {"EXIT_VMMCALL", 0x081},   {"EXIT_NPF", 0x400}};

// Expected field values (name → value) that trace-cmd's text shows for one kvm event.
std::map<std::string, uint64_t> Expected(std::string_view event, const std::vector<std::string>& t) {
  std::map<std::string, uint64_t> e;
  auto key_value = [&](std::string_view key, const char* field, int base) {
    for (size_t i = 0; i + 1 < t.size(); ++i) {
      if (t[i] == key) {
        e[field] = Num(t[i + 1], base);
        return;
      }
    }
    ADD_FAILURE() << event << ": no '" << key << "' in trace-cmd text";
  };
  if (event == "kvm_exit") {
    EXPECT_TRUE(kSvmExitCodes.count(t.at(1))) << "unknown reason " << t.at(1);
    if (kSvmExitCodes.count(t.at(1))) e["exit_reason"] = kSvmExitCodes.at(t[1]);
    key_value("rip", "guest_rip", 16);
    e["info1"] = Num(t.at(5), 16);
    e["info2"] = Num(t.at(6), 16);
  } else if (event == "kvm_entry") {
    key_value("vcpu", "vcpu_id", 10);
    key_value("rip", "rip", 16);
  } else if (event == "kvm_page_fault") {
    key_value("vcpu", "vcpu_id", 10);
    key_value("rip", "guest_rip", 16);
    key_value("address", "fault_address", 16);
    key_value("error_code", "error_code", 16);
  } else if (event == "kvm_cpuid") {
    key_value("func", "function", 16);
    key_value("idx", "index", 16);
    key_value("rax", "rax", 16);
    key_value("rbx", "rbx", 16);
    key_value("rcx", "rcx", 16);
    key_value("rdx", "rdx", 16);
    e["found"] = t.back() == "found";
  } else if (event == "kvm_emulate_insn") {
    e["csbase"] = Num(t.at(0), 16);
    e["rip"] = Num(t.at(1), 16);
    e["len"] = t.size() - 2;
    for (size_t i = 2; i < t.size(); ++i) e["insn[" + std::to_string(i - 2) + "]"] = Num(t[i], 16);
  } else if (event == "kvm_pio") {
    e["rw"] = t.at(0) == "pio_write";
    key_value("at", "port", 16);
    key_value("size", "size", 10);
    key_value("count", "count", 10);
    key_value("val", "val", 16);
  } else if (event == "kvm_userspace_exit") {
    e["reason"] = Num(t.at(2), 10);
  } else if (event == "kvm_msr") {
    e["write"] = t.at(0) == "msr_write";
    e["ecx"] = Num(t.at(1), 16);
    e["data"] = Num(t.at(2), 16);
  } else if (event == "kvm_mmio") {
    static const std::map<std::string, uint64_t> kTypes = {{"unsatisfied-read", 0}, {"read", 1}, {"write", 2}};
    e["type"] = kTypes.at(t.at(1));
    key_value("len", "len", 10);
    key_value("gpa", "gpa", 16);
    key_value("val", "val", 16);
  } else if (event == "kvm_hypercall") {
    key_value("nr", "nr", 16);
    key_value("a0", "a0", 16);
    key_value("a1", "a1", 16);
    key_value("a2", "a2", 16);
    key_value("a3", "a3", 16);
  } else if (event == "kvm_fpu") {
    e["load"] = t.at(0) == "load";
  } else if (event == "kvm_write_tsc_offset") {
    key_value("vcpu", "vcpu_id", 10);
    key_value("prev", "previous_tsc_offset", 10);
    key_value("next", "next_tsc_offset", 10);
  } else if (event == "vcpu_match_mmio") {
    key_value("gva", "gva", 16);
    key_value("gpa", "gpa", 16);
    e["write"] = t.at(4) == "Write";
    e["gpa_match"] = t.at(5) == "GPA";
  } else if (event == "kvm_update_master_clock") {
    key_value("masterclock", "use_master_clock", 10);
    key_value("hostclock", "host_clock", 16);
    key_value("offsetmatched", "offset_matched", 10);
  } else if (event == "kvm_apicv_inhibit_changed") {
    e["set"] = t.at(0) == "set";
    key_value("reason", "reason", 10);
    key_value("inhibits", "inhibits", 16);
  } else if (event == "kvm_track_tsc") {
    key_value("vcpu_id", "vcpu_id", 10);
    key_value("masterclock", "use_master_clock", 10);
    key_value("offsetmatched", "nr_vcpus_matched_tsc", 10);
    key_value("nr_online", "online_vcpus", 10);
    key_value("hostclock", "host_clock", 16);
  } else {
    ADD_FAILURE() << "no parser for trace-cmd's rendering of " << event;
  }
  return e;
}

uint64_t Actual(const EventFormat& fmt, const std::string& name, std::span<const uint8_t> payload) {
  size_t br = name.find('[');
  if (br != std::string::npos) {  // one element of a byte array
    const FieldFormat* f = fmt.Field(name.substr(0, br));
    size_t idx = std::stoul(name.substr(br + 1));
    EXPECT_NE(f, nullptr) << name;
    return f && f->offset + idx < payload.size() ? payload[f->offset + idx] : ~0ull;
  }
  const FieldFormat* f = fmt.Field(name);
  EXPECT_NE(f, nullptr) << fmt.name << " lacks " << name;
  return ReadUnsigned(f, payload);
}

void CompareWithTraceCmd(const std::string& dat, const std::string& report) {
  auto lines = ReadLines(report);
  ASSERT_GT(lines.size(), 1u) << report;
  auto src = OpenRawEventSource(dat);
  ASSERT_TRUE(src.ok()) << src.error().message;
  RawEventSource& s = *src.value();
  size_t checked = 0, kvm_fields = 0;
  RawEvent ev;
  for (const std::string& line : lines) {
    if (line.starts_with("cpus=") || line.empty()) continue;
    // "        comm-pid   [cpu]    secs.usecs: event:   text"
    size_t lb = line.find('['), rb = line.find(']');
    ASSERT_NE(lb, std::string::npos) << line;
    std::string head = line.substr(0, lb);
    while (!head.empty() && head.back() == ' ') head.pop_back();
    int pid = std::stoi(head.substr(head.rfind('-') + 1));
    int cpu = std::stoi(line.substr(lb + 1, rb - lb - 1));
    size_t colon = line.find(':', rb);
    std::string ts = line.substr(rb + 1, colon - rb - 1);
    size_t dot = ts.find('.');
    uint64_t us = std::stoull(ts.substr(0, dot)) * 1000000 + std::stoull(ts.substr(dot + 1));
    size_t colon2 = line.find(':', colon + 1);
    std::string event = line.substr(colon + 2, colon2 - colon - 2);
    std::string text = line.substr(colon2 + 1);

    ASSERT_TRUE(s.Next(&ev, nullptr)) << "we ended before trace-cmd's line: " << line;
    const EventFormat* fmt = s.formats().ById(ev.type_id);
    ASSERT_NE(fmt, nullptr);
    ASSERT_EQ(fmt->name, event) << line;
    ASSERT_EQ(ev.cpu, cpu) << line;
    ASSERT_EQ(ev.tid, pid) << line;
    ASSERT_EQ((ev.ts_ns + 500) / 1000, us) << line;  // trace-cmd rounds to the nearest µs
    for (const auto& [field, value] : Expected(event, Tokens(text))) {
      ASSERT_EQ(Actual(*fmt, field, ev.payload), value) << field << " in: " << line;
      ++kvm_fields;
    }
    ++checked;
  }
  EXPECT_FALSE(s.Next(&ev, nullptr)) << "we have events trace-cmd does not show";
  EXPECT_FALSE(s.diagnostics().HasDataLoss());
  EXPECT_GT(kvm_fields, checked);  // at least one field per event on average
}

TEST(TraceDatPeer, Kvmprobe200MatchesTraceCmdReport) {
  CompareWithTraceCmd(kSvm + "kvmprobe-200.trace.dat", kSvm + "kvmprobe-200.trace-cmd-report.txt");
}

TEST(TraceDatPeer, Dual5000MatchesTraceCmdReport) {
  CompareWithTraceCmd(kSvm + "dual-5000/trace.dat", kSvm + "dual-5000/trace-cmd-report.txt.gz");
}

}  // namespace
}  // namespace exitscope
