// `report --csv` and `report --histogram REASON` on the real traces: the CSV's numbers are the JSON
// report's, row for row (--by respected), quoting follows RFC 4180; the histogram's buckets hold
// every timed exit of the reason and mark the buckets of the JSON's p50 and p99.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "report/csv_reporter.h"
#include "test_util.h"

namespace exitscope {
namespace {

const std::string kTraces = std::string(EXITSCOPE_SHARED_DIR) + "/traces";

testing::CommandResult RunReport(const std::string& args) {
  return testing::RunCommand(std::string(EXITSCOPE_BINARY) + " report " + args + " 2>/dev/null");
}

// RFC 4180 records: CRLF ends a record outside quotes; "" is a quote inside a quoted field.
std::vector<std::vector<std::string>> ParseCsv(const std::string& text) {
  std::vector<std::vector<std::string>> rows(1);
  std::string field;
  bool quoted = false, in_quotes = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"')
        field += '"', ++i;
      else if (c == '"')
        in_quotes = false;
      else
        field += c;
    } else if (c == '"' && field.empty() && !quoted) {
      in_quotes = quoted = true;
    } else if (c == ',') {
      rows.back().push_back(field), field.clear(), quoted = false;
    } else if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') {
      rows.back().push_back(field), field.clear(), quoted = false;
      rows.emplace_back();
      ++i;
    } else if (quoted || c == '\r' || c == '\n') {
      ADD_FAILURE() << "stray character after a quoted field or a bare line break at " << i;
      return {};
    } else {
      field += c;
    }
  }
  if (rows.back().empty()) rows.pop_back();
  return rows;
}

std::string JsonText(const nlohmann::json& v) { return v.is_null() ? std::string() : v.dump(); }
std::string JsonStr(const nlohmann::json& v) { return v.get<std::string>(); }

void ExpectCsvEqualsJson(const std::string& file, const std::string& by) {
  const std::string args = "--by " + by + " '" + kTraces + "/" + file + "'";
  auto csv = RunReport("--csv " + args);
  auto json = RunReport("--json " + args);
  ASSERT_EQ(csv.status, json.status) << file;
  auto rows = ParseCsv(csv.out);
  ASSERT_FALSE(rows.empty()) << file;
  const auto& header = rows[0];
  std::map<std::string, size_t> col;
  for (size_t i = 0; i < header.size(); ++i) col[header[i]] = i;
  auto j = nlohmann::json::parse(json.out);
  size_t r = 1;
  for (const auto& g : j["groups"]) {
    for (const auto& reason : g["reasons"]) {
      ASSERT_LT(r, rows.size()) << file;
      const auto& row = rows[r++];
      ASSERT_EQ(row.size(), header.size()) << file << " row " << r;
      auto at = [&](const char* name) { return row[col.at(name)]; };
      EXPECT_EQ(at("group_kind"), JsonStr(g["kind"]));
      EXPECT_EQ(at("group_id"), JsonText(g["id"]));
      EXPECT_EQ(at("group_label"), JsonStr(g["label"]));
      EXPECT_EQ(at("reason"), JsonStr(reason["reason"]));
      EXPECT_EQ(at("isa"), JsonStr(reason["isa"]));
      for (const char* k :
           {"code", "count", "timed_count", "pct_count", "pct_time", "total_ns", "blocked_ns", "min_ns", "mean_ns",
            "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns", "userspace_count", "userspace_ns"}) {
        EXPECT_EQ(at(k), JsonText(reason[k])) << file << " " << by << " " << k << " of " << reason["reason"];
      }
      EXPECT_EQ(at("time_unit"), JsonStr(j["context"]["time_unit"]));
      EXPECT_EQ(std::stoull(at("untimed_count")),
                reason["count"].get<uint64_t>() - reason["timed_count"].get<uint64_t>());
    }
  }
  EXPECT_EQ(r, rows.size()) << file << ": CSV rows past the JSON's";
}

TEST(ReportCsv, EqualsTheJsonReportOnRealTraces) {
  ExpectCsvEqualsJson("hip24-vmx/host-2vcpu-6.5.dat", "reason");
  ExpectCsvEqualsJson("hip24-vmx/host-2vcpu-6.5.dat", "vcpu");
  ExpectCsvEqualsJson("nested-svm-6.1/dual-5000/trace.dat", "vm");
  ExpectCsvEqualsJson("nested-svm-6.1/kvmprobe-200.perf.data", "cpu");
  ExpectCsvEqualsJson("nested-arm64-6.1/trace.txt", "reason");
}

TEST(ReportCsv, QuotesAsRfc4180) {
  Report r;
  GroupReport g;
  g.kind = "vm";
  g.label = "qemu \"web,1\" (pid 7)";
  ReasonRow row;
  row.name = "HLT";
  row.count = 3;
  g.reasons.push_back(row);
  r.groups.push_back(g);
  std::string csv = RenderCsvReport(r);
  EXPECT_NE(csv.find(",\"qemu \"\"web,1\"\" (pid 7)\",HLT,"), std::string::npos) << csv;
  EXPECT_EQ(csv.find('\n'), csv.find("\r\n") + 1);  // CRLF record ends
  auto rows = ParseCsv(csv);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][2], "qemu \"web,1\" (pid 7)");
  EXPECT_EQ(rows[1][10], "");  // pct_time of a reason without timed exits: unknown
}

struct HistLine {
  uint64_t count;
  bool p50, p99;
  std::string lo, hi;
};

std::vector<HistLine> HistogramLines(const std::string& text) {
  std::vector<HistLine> out;
  std::regex line(R"(^\s+(\S+) – (\S+)\s+([\d,]+)\s+[\d.]+% \|.*\|(.*)$)");
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) {
    std::smatch m;
    if (!std::regex_match(l, m, line)) continue;
    std::string n = m[3];
    n.erase(std::remove(n.begin(), n.end(), ','), n.end());
    out.push_back({std::stoull(n), m[4].str().find("p50") != std::string::npos,
                   m[4].str().find("p99") != std::string::npos, m[1], m[2]});
  }
  return out;
}

TEST(ReportHistogram, BucketsHoldEveryTimedExitAndMarkThePercentiles) {
  for (auto [file, reason] : std::vector<std::pair<std::string, std::string>>{
           {"hip24-vmx/host-2vcpu-6.5.dat", "APIC_WRITE"},
           {"hip24-vmx/host-2vcpu-6.5.dat", "HLT"},  // all blocked: every time 0, one bucket [0, 1)
           {"hip24-vmx/host-2vcpu-6.5.dat", "MSR_WRITE"},
           {"nested-svm-6.1/dual-5000/trace.dat", "npf"},
           {"nested-svm-6.1/dual-5000/perf.data", "EPT_VIOLATION"}}) {  // the VMX spelling maps to npf
    const std::string path = "'" + kTraces + "/" + file + "'";
    auto h = RunReport("--histogram " + reason + " " + path);
    ASSERT_TRUE(h.status == 0 || h.status == 65) << file << " " << reason;  // 65: PARTIAL, as report
    auto j = nlohmann::json::parse(RunReport("--json --reason " + reason + " " + path).out);
    const auto& row = j["groups"][0]["reasons"][0];
    auto lines = HistogramLines(h.out);
    ASSERT_FALSE(lines.empty()) << h.out;
    uint64_t sum = 0;
    int p50 = 0, p99 = 0;
    for (const auto& l : lines) sum += l.count, p50 += l.p50, p99 += l.p99;
    EXPECT_EQ(sum, row["timed_count"].get<uint64_t>()) << h.out;
    EXPECT_EQ(p50, 1) << h.out;
    EXPECT_EQ(p99, 1) << h.out;
    EXPECT_NE(h.out.find("p50 " + std::string()), std::string::npos);
    // The p50 line's count reaches the median: the lines above it hold less than half the exits.
    uint64_t below = 0;
    for (const auto& l : lines) {
      if (l.p50) break;
      below += l.count;
    }
    EXPECT_LT(below * 2, sum) << h.out;
  }
}

TEST(ReportHistogram, RefusesWhatItCannotDraw) {
  const std::string vmx = "'" + kTraces + "/hip24-vmx/host-1vcpu-6.5.dat'";
  auto run = [&](const std::string& args) {
    return testing::RunCommand(std::string(EXITSCOPE_BINARY) + " report " + args + " 2>&1 >/dev/null");
  };
  EXPECT_EQ(run("--histogram NOPE " + vmx).status, 64);
  EXPECT_EQ(run("--histogram read_cr4 " + vmx).status, 64);  // SVM only
  EXPECT_EQ(run("--histogram HLT --json " + vmx).status, 64);
  EXPECT_EQ(run("--csv --json " + vmx).status, 64);
  EXPECT_EQ(run("--csv --by rip " + vmx).status, 64);
}

}  // namespace
}  // namespace exitscope
