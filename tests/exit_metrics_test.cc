// The metrics `serve` exports, on a real trace: kvmprobe-200 (real AMD SVM KVM host), whose
// per-reason counts `perf kvm stat report` gave (its README: msr 600, npf 401, io 400, cpuid 200,
// hlt 199); the exposition formats; the series lifetime; the HTTP endpoint's answers.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "analysis/exit_metrics.h"
#include "pipeline/input_detector.h"
#include "cli/trace_metrics.h"
#include "report/openmetrics_reporter.h"
#include "sinks/metrics_http_server.h"
#include "sinks/microhttpd_api.h"
#include "test_util.h"

namespace exitscope {
namespace {

const std::string kKvmprobe = std::string(EXITSCOPE_SHARED_DIR) + "/traces/nested-svm-6.1/kvmprobe-200.trace.dat";

// Prometheus's own linter on an exposition (Debian package prometheus, as CTest label prometheus):
// "" when it passes, else what it said.
std::string Promtool(const std::string& exposition) {
  std::string path = ::testing::TempDir() + "exitscope-exposition-" + std::to_string(::getpid()) + ".txt";
  if (!testing::WriteFile(path, exposition)) return "cannot write " + path;
  testing::CommandResult r = testing::RunCommand("promtool check metrics < '" + path + "' 2>&1");
  std::remove(path.c_str());
  return r.status == 0 ? "" : "promtool: " + r.out;
}

TEST(ExitMetrics, RealTraceCountsMatchPerfKvmStat) {
  auto tm = MetricsOfTrace(kKvmprobe, {});
  ASSERT_TRUE(tm.ok()) << tm.error().message;
  std::map<std::string, uint64_t> by_reason, timed;
  for (const auto& [domain, d] : tm->metrics->domains())
    for (const auto& [reason, r] : d.reasons) {
      by_reason[reason] += r.exits;
      timed[reason] += r.timed;
    }
  EXPECT_EQ(by_reason["msr"], 600u);
  EXPECT_EQ(by_reason["npf"], 401u);
  EXPECT_EQ(by_reason["io"], 400u);
  EXPECT_EQ(by_reason["cpuid"], 200u);
  // exits_total is every kvm_exit, as report's COUNT: perf kvm stat's 199 timed HLTs and the last
  // one, open when the trace ended.
  EXPECT_EQ(by_reason["hlt"], 200u);
  EXPECT_EQ(timed["hlt"], 199u);
  std::string text =
      RenderExposition(*tm->metrics, tm->diagnostics, nullptr, {ExpositionFormat::kPrometheusText, 3, ""});
  EXPECT_NE(text.find("# TYPE exitscope_exits_total counter\n"), std::string::npos);
  EXPECT_NE(text.find("reason=\"msr\"} 600\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE exitscope_vm_info gauge\n"), std::string::npos);
  EXPECT_NE(text.find("exitscope_exit_duration_seconds_bucket{"), std::string::npos);
  EXPECT_EQ(text.find("# EOF"), std::string::npos);
  std::string om = RenderExposition(*tm->metrics, tm->diagnostics, nullptr, {ExpositionFormat::kOpenMetrics, 0, ""});
  EXPECT_NE(om.find("# TYPE exitscope_exits counter\n"), std::string::npos);
  EXPECT_NE(om.find("# TYPE exitscope_vm info\n"), std::string::npos);
  EXPECT_NE(om.find("# UNIT exitscope_exit_seconds seconds\n"), std::string::npos);
  EXPECT_EQ(om.find("exitscope_exit_duration_seconds"), std::string::npos);  // opt-in only
  EXPECT_TRUE(om.ends_with("# EOF\n"));
  EXPECT_EQ(Promtool(text), "");  // (it reads the text format only, not OpenMetrics)
}

// Live (serve), the pairer never reaches an end: an exit counted with its pair would leave out the
// one still being handled, such as a VM's last. Counted at its kvm_exit (ExitCounting::kAtKvmExit,
// every event shown first to the metrics, then to the pairer, as serve's session does) every exit is
// in exits_total at once, and the times are the pairs' as before.
TEST(ExitMetrics, LiveCountsEachExitAtItsKvmExit) {
  auto run = [](ExitCounting counting, std::map<std::string, uint64_t>* exits, std::map<std::string, uint64_t>* timed,
                uint64_t* vcpu_exits) {
    auto src = OpenKvmEventSource(kKvmprobe);
    ASSERT_TRUE(src.ok()) << src.error().message;
    ExitMetrics m([](int32_t, int32_t) { return ExitVmName{"vm", "", "", 0}; }, counting);
    Diagnostics diag;
    ExitPairer pairer((*src)->meta(), &diag, &m);
    KvmEvent e;
    while ((*src)->Next(&e, nullptr)) {
      m.OnKvmEvent(e);
      pairer.OnEvent(e);
    }
    // No pairer.Finish(): a live session does not end while the VM runs.
    for (const auto& [domain, d] : m.domains()) {
      for (const auto& [reason, r] : d.reasons) (*exits)[reason] += r.exits, (*timed)[reason] += r.timed;
      for (const auto& [vcpu, n] : d.vcpu_exits) *vcpu_exits += n;
    }
  };
  std::map<std::string, uint64_t> exits, timed, paired_exits, paired_timed;
  uint64_t vcpu = 0, paired_vcpu = 0;
  run(ExitCounting::kAtKvmExit, &exits, &timed, &vcpu);
  run(ExitCounting::kWhenPaired, &paired_exits, &paired_timed, &paired_vcpu);
  EXPECT_EQ(exits["hlt"], 200u);  // the trace's last exit, open at its end, is counted
  EXPECT_EQ(paired_exits["hlt"], 199u);
  EXPECT_EQ(exits["msr"], 600u);
  EXPECT_EQ(timed, paired_timed);
  EXPECT_EQ(timed["hlt"], 199u);
  EXPECT_EQ(vcpu, 2610u);  // every kvm_exit (report: kvm_exit 2,610)
  EXPECT_EQ(paired_vcpu, 2609u);
}

ExitSample Sample(int32_t tid, uint32_t reason, uint64_t dur_ns, bool vmm = false) {
  ExitSample s = testing::MakeExitSample(tid, Isa::kVmx, reason, dur_ns);
  s.to_userspace = vmm;
  return s;
}

TEST(ExitMetrics, LabelsEscapedStagesSplitAndSeriesOutliveTheirVmForTheGrace) {
  std::string domain = "we\"b\\0\n1";
  ExitMetrics m([&](int32_t tid, int32_t) { return ExitVmName{domain, "u-1", "qemu", tid - 100}; });
  constexpr uint32_t kCpuid = 10, kIo = 30;  // VMX basic exit reasons (arch/x86/include/uapi/asm/vmx.h)
  m.OnExitSample(Sample(100, kCpuid, 1500));
  m.OnExitSample(Sample(101, kIo, 30000, true));
  m.OnUntimedExit(Sample(101, kIo, 0));
  std::string text = RenderExposition(m, {}, nullptr, {ExpositionFormat::kPrometheusText, 0, ""});
  EXPECT_NE(text.find("exitscope_exits_total{domain=\"we\\\"b\\\\0\\n1\",reason=\"IO_INSTRUCTION\"} 2\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("reason=\"IO_INSTRUCTION\",stage=\"vmm\"} 3e-05\n"), std::string::npos) << text;
  EXPECT_NE(text.find("reason=\"CPUID\",stage=\"kernel\"} 1.5e-06\n"), std::string::npos) << text;
  EXPECT_NE(text.find("vcpu=\"1\"} 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("uuid=\"u-1\",vmm=\"qemu\",vcpus=\"2\"} 1\n"), std::string::npos) << text;
  EXPECT_EQ(Promtool(text), "");  // the escaped label values too
  // The VM ends: its series stay through the grace period, then go.
  m.Prune({domain}, 1000, 500);
  m.Prune({}, 2000, 500);
  EXPECT_EQ(m.domains().size(), 1u);
  m.Prune({}, 2400, 500);
  EXPECT_EQ(m.domains().size(), 1u);
  m.Prune({}, 2500, 500);
  EXPECT_EQ(m.domains().size(), 0u);
}

TEST(ExitMetrics, AcceptHeaderChoosesTheFormat) {
  // What Prometheus 2.42 sends (scrape/scrape.go acceptHeader).
  EXPECT_EQ(ExpositionFormatForAccept("application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
                                      "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
            ExpositionFormat::kOpenMetrics);
  EXPECT_EQ(ExpositionFormatForAccept(""), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(ExpositionFormatForAccept("*/*"), ExpositionFormat::kPrometheusText);
  EXPECT_EQ(ExpositionFormatForAccept("text/plain, application/openmetrics-text;q=0"),
            ExpositionFormat::kPrometheusText);
  EXPECT_EQ(ExpositionFormatForAccept("text/plain;q=0.5, application/openmetrics-text; q=0.2"),
            ExpositionFormat::kOpenMetrics);
}

std::string Http(uint16_t port, const std::string& request) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return "connect failed";
  }
  (void)!::write(fd, request.data(), request.size());
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

TEST(MetricsHttpServer, AnswersGetMetricsOnlyAndRefusesBadAddresses) {
  auto s = MetricsHttpServer::Start("127.0.0.1:0", [](std::string_view accept) {
    return Exposition{std::string("accept=") + std::string(accept) + "\n", "text/plain; version=0.0.4"};
  });
  ASSERT_TRUE(s.ok()) << s.error().message;
  uint16_t port = (*s)->port();
  ASSERT_NE(port, 0);
  std::string ok = Http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: a/b\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(ok.starts_with("HTTP/1.1 200")) << ok;
  EXPECT_NE(ok.find("accept=a/b"), std::string::npos) << ok;
  EXPECT_NE(ok.find("text/plain; version=0.0.4"), std::string::npos) << ok;
  EXPECT_TRUE(Http(port, "GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").starts_with("HTTP/1.1 404"));
  std::string post =
      Http(port, "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab");
  EXPECT_TRUE(post.starts_with("HTTP/1.1 405")) << post;
  std::string big = Http(port, "GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + std::string(64 * 1024, 'a') + "\r\n\r\n");
  EXPECT_FALSE(big.starts_with("HTTP/1.1 200")) << big.substr(0, 80);
  EXPECT_GE((*s)->requests(), 3u);
  for (const char* bad : {"localhost:9464", "127.0.0.1", "127.0.0.1:99999", "[::1:9464", "1.2.3.4:x"}) {
    auto b = MetricsHttpServer::Start(bad, {});
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.error().code, kExitUsage) << bad;
  }
}

// A request head that waits unread is seen without being consumed: serve keeps such a connection
// when it must close one (the server is behind, not the client).
TEST(MetricsHttpServer, RequestHeadWaitingPeeksWithoutConsuming) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
  EXPECT_FALSE(RequestHeadWaiting(sv[1]));  // nothing sent yet
  const std::string line = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
  ASSERT_EQ(::write(sv[0], line.data(), line.size()), static_cast<ssize_t>(line.size()));
  EXPECT_FALSE(RequestHeadWaiting(sv[1]));  // a slow client's partial head
  ASSERT_EQ(::write(sv[0], "\r\n", 2), 2);
  EXPECT_TRUE(RequestHeadWaiting(sv[1]));
  EXPECT_TRUE(RequestHeadWaiting(sv[1]));  // still there
  std::string got(line.size() + 2, '\0');
  EXPECT_EQ(::read(sv[1], got.data(), got.size()), static_cast<ssize_t>(got.size()));
  EXPECT_EQ(got, line + "\r\n");
  EXPECT_FALSE(RequestHeadWaiting(sv[1]));  // read by the server: nothing waits
  ::close(sv[0]);
  ::close(sv[1]);
  EXPECT_FALSE(RequestHeadWaiting(-1));
}

// serve's HTTP library is loaded when the endpoint starts (not linked: start-up of every command).
TEST(MicrohttpdApi, LoadsOnceAndNamesThePackageWhenMissing) {
  auto api = LoadMicrohttpd();
  ASSERT_TRUE(api.ok()) << api.error().message;
  EXPECT_NE((*api)->start_daemon, nullptr);
  EXPECT_NE((*api)->destroy_response, nullptr);
  auto again = LoadMicrohttpd(MicrohttpdSoname());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *api);
  auto missing = LoadMicrohttpd("libexitscope-no-such-http.so.0");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, kExitUnavailable);
  EXPECT_NE(missing.error().message.find("libexitscope-no-such-http.so.0"), std::string::npos)
      << missing.error().message;
  EXPECT_NE(missing.error().hint.find("apt install libmicrohttpd"), std::string::npos) << missing.error().hint;
  // A library that is there but is not libmicrohttpd: the first function it lacks is named.
  auto wrong = LoadMicrohttpd("libz.so.1");
  ASSERT_FALSE(wrong.ok());
  EXPECT_NE(wrong.error().message.find("MHD_start_daemon"), std::string::npos) << wrong.error().message;
}

}  // namespace
}  // namespace exitscope
