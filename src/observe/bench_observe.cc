#include "observe/bench_observe.h"

#include <fmt/format.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <atomic>
#include <chrono>
#include <fstream>
#include <thread>

#include "analysis/exit_pairer.h"
#include "base/json_schema.h"
#include "live/live_exits.h"
#include "observe/bpf_exit_reader.h"
#include "observe/kvm_debugfs_stats.h"
#include "sources/live/tracefs_instance.h"

extern char** environ;

namespace exitscope {
namespace {

class NoObserver : public BenchObserver {
 public:
  Status Start() override { return {}; }
  Result<int64_t> Stop() override { return int64_t{-1}; }
};

// What kvm_stat does: reads the debugfs counters every 100 ms.
class StatsObserver : public BenchObserver {
 public:
  Status Start() override {
    if (auto r = ReadKvmDebugfs(); !r.ok()) return r.error();
    stop_ = false;
    seen_ = 0;
    thread_ = std::thread([this] {
      while (!stop_) {
        if (auto r = ReadKvmDebugfs(); r.ok()) {
          int64_t mine = 0;
          for (const auto& vm : *r) {
            if (vm.pid != ::getpid()) continue;
            if (auto it = vm.counters.find("exits"); it != vm.counters.end()) mine += static_cast<int64_t>(it->second);
          }
          seen_ = std::max<int64_t>(seen_, mine);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    return {};
  }
  Result<int64_t> Stop() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return int64_t{seen_};  // the largest "exits" seen of a live bench VM: a lower bound
  }
  ~StatsObserver() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> seen_{0};
  std::thread thread_;
};

class BpfObserver : public BenchObserver {
 public:
  Status Start() override {
    auto r = BpfExitReader::Load({});
    if (!r.ok()) return r.error();
    reader_ = std::move(*r);
    return {};
  }
  Result<int64_t> Stop() override {
    auto snap = reader_->Snapshot();
    reader_.reset();
    if (!snap.ok()) return snap.error();
    int64_t n = 0;
    for (const auto& e : *snap)
      if (static_cast<int>(e.key.tgid) == ::getpid()) n += static_cast<int64_t>(e.stats.exits);
    return n;
  }

 private:
  std::unique_ptr<BpfExitReader> reader_;
};

// A tracefs capture as top/serve run it (its own instance, pages drained and paired), on a thread
// of its own that polls as top's loop does.
class TracefsObserver : public BenchObserver, public ExitSampleSink {
 public:
  explicit TracefsObserver(bool minimal) : minimal_(minimal) {}
  void OnExitSample(const ExitSample& s) override {
    if (s.tid == ::getpid()) ++seen_;  // the bench runs its vCPU on the main thread
  }
  Status Start() override {
    LiveExitOptions o;
    if (minimal_) o.events = {"kvm:kvm_exit", "kvm:kvm_entry"};
    auto s = LiveExitSession::Start(o, this);
    if (!s.ok()) return s.error();
    session_ = std::move(*s);
    // The instance leaves its own process out (set_event_notrace_pid = getpid(), so a recorder does
    // not trace itself); here that process is the bench, whose exits are the point. Opening the file
    // with O_TRUNC clears the list (kernel/trace/trace_events.c, event_pid_open on O_TRUNC).
    { std::ofstream clear(session_->instance_dir() + "/set_event_notrace_pid", std::ios::trunc); }
    stop_ = false;
    seen_ = 0;
    thread_ = std::thread([this] {
      while (!stop_) {
        if (!session_->Poll(100).ok()) break;
        if (!session_->Collect().ok()) break;
      }
    });
    return {};
  }
  Result<int64_t> Stop() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    (void)session_->Collect();
    Status st = session_->Stop();
    session_.reset();
    if (!st.ok()) return st.error();
    return seen_;
  }
  ~TracefsObserver() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  bool minimal_;
  std::unique_ptr<LiveExitSession> session_;
  std::atomic<bool> stop_{false};
  int64_t seen_ = 0;
  std::thread thread_;
};

// `perf record -e 'kvm:*' -a` of the same run, to a scratch file removed afterwards.
class PerfObserver : public BenchObserver {
 public:
  Status Start() override {
    path_ = fmt::format("/tmp/exitscope-observe-{}.perf.data", ::getpid());
    const char* argv[] = {"perf", "record", "-q", "-a", "-e", "kvm:*", "-o", path_.c_str(), nullptr};
    posix_spawn_file_actions_t quiet;  // perf's warnings about formats it cannot parse are not ours
    posix_spawn_file_actions_init(&quiet);
    posix_spawn_file_actions_addopen(&quiet, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    int err = posix_spawnp(&pid_, "perf", &quiet, nullptr, const_cast<char**>(argv), environ);
    posix_spawn_file_actions_destroy(&quiet);
    if (err != 0) {
      pid_ = -1;
      return MakeError(kExitUnavailable, "observe.no-perf", "cannot run perf", "install linux-perf");
    }
    // perf writes its header once its events are on; wait for it (bounded), then a little more.
    for (int i = 0; i < 100; ++i) {
      struct stat st {};
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return MakeError(kExitUnavailable, "observe.perf-failed",
                         "perf record exited at once (status " + std::to_string(status) + ")",
                         "run as root with the kvm tracepoints available");
      }
      if (::stat(path_.c_str(), &st) == 0 && st.st_size > 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    return {};
  }
  Result<int64_t> Stop() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGINT);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      pid_ = -1;
    }
    ::unlink(path_.c_str());
    return int64_t{-1};
  }
  ~PerfObserver() override { (void)Stop(); }

 private:
  std::string path_;
  pid_t pid_ = -1;
};

// exitscope's own `record` (to a scratch file) or `top --mode tracefs` (to /dev/null) as a user
// runs them, in a child process: what our own live commands cost per exit, read loop included.
// Started when the child's tracefs instance traces (bounded wait); stopped by SIGINT, as Ctrl-C.
class OwnCommandObserver : public BenchObserver {
 public:
  explicit OwnCommandObserver(bool record) : record_(record) {}
  Status Start() override {
    auto tracefs = FindTracefs();
    if (!tracefs.ok()) return tracefs.error();
    path_ = fmt::format("/tmp/exitscope-observe-{}.dat", ::getpid());
    std::vector<std::string> args = {"exitscope"};
    if (record_)
      args.insert(args.end(), {"record", "-o", path_});
    else
      args.insert(args.end(), {"top", "--mode", "tracefs", "--json"});
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t io;
    posix_spawn_file_actions_init(&io);
    posix_spawn_file_actions_addopen(&io, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&io, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    int err = posix_spawn(&pid_, "/proc/self/exe", &io, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&io);
    if (err != 0) {
      pid_ = -1;
      return MakeError(kExitUnavailable, "observe.spawn-failed", std::string("cannot run exitscope: ") + strerror(err));
    }
    // Up once its instance traces: instances/exitscope-<pid>/tracing_on reads 1 (bounded: 60 s under TCG).
    const std::string on = fmt::format("{}/instances/exitscope-{}/tracing_on", *tracefs, pid_);
    for (int i = 0; i < 600; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return MakeError(kExitUnavailable, "observe.command-failed",
                         fmt::format("exitscope {} exited at once (status {})", args[1], status));
      }
      std::ifstream in(on);
      std::string v;
      if (in >> v && v == "1") return {};
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    (void)Stop();
    return MakeError(kExitUnavailable, "observe.command-slow",
                     "exitscope " + args[1] + " did not start tracing in 60 s");
  }
  Result<int64_t> Stop() override {
    if (pid_ > 0) {
      ::kill(pid_, SIGINT);
      int status = 0;
      rusage ru{};
      ::wait4(pid_, &status, 0, &ru);
      cpu_s_ = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
      pid_ = -1;
    }
    ::unlink(path_.c_str());
    return int64_t{-1};
  }
  double CpuSeconds() const override { return cpu_s_; }
  ~OwnCommandObserver() override { (void)Stop(); }

 private:
  bool record_;
  double cpu_s_ = -1;
  std::string path_;
  pid_t pid_ = -1;
};

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

const std::vector<std::string>& ObserveModes() {
  static const std::vector<std::string> modes = {"none",    "stats", "bpf",    "tracefs-minimal",
                                                 "tracefs", "top",   "record", "perf"};
  return modes;
}

Result<std::vector<std::string>> ParseObserveModes(const std::string& list) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= list.size()) {
    size_t comma = list.find(',', pos);
    std::string m = list.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!m.empty()) {
      if (std::find(ObserveModes().begin(), ObserveModes().end(), m) == ObserveModes().end()) {
        return MakeError(kExitUsage, "bench.bad-observe", "--observe: unknown mode '" + m + "'",
                         "modes: none, stats, bpf, tracefs-minimal, tracefs, top, record, perf (comma-separated)");
      }
      if (std::find(out.begin(), out.end(), m) == out.end()) out.push_back(m);
    }
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  if (out.empty()) {
    return MakeError(kExitUsage, "bench.bad-observe", "--observe needs at least one mode",
                     "e.g. --observe none,stats,bpf,tracefs-minimal,tracefs,perf");
  }
  return out;
}

Result<std::unique_ptr<BenchObserver>> MakeBenchObserver(const std::string& mode) {
  if (mode == "none") return std::unique_ptr<BenchObserver>(new NoObserver());
  if (mode == "stats") return std::unique_ptr<BenchObserver>(new StatsObserver());
  if (mode == "bpf") return std::unique_ptr<BenchObserver>(new BpfObserver());
  if (mode == "tracefs-minimal") return std::unique_ptr<BenchObserver>(new TracefsObserver(true));
  if (mode == "tracefs") return std::unique_ptr<BenchObserver>(new TracefsObserver(false));
  if (mode == "perf") return std::unique_ptr<BenchObserver>(new PerfObserver());
  if (mode == "top") return std::unique_ptr<BenchObserver>(new OwnCommandObserver(false));
  if (mode == "record") return std::unique_ptr<BenchObserver>(new OwnCommandObserver(true));
  return MakeError(kExitUsage, "bench.bad-observe", "unknown observer '" + mode + "'");
}

Result<ObservedBench> RunObservedBench(const kvmbench::BenchOptions& options, const std::vector<std::string>& modes,
                                       uint64_t repeats) {
  ObservedBench out;
  out.repeats = repeats;
  std::vector<std::unique_ptr<BenchObserver>> observers;
  std::vector<std::string> skip(modes.size());
  for (const std::string& m : modes) {
    auto o = MakeBenchObserver(m);
    if (!o.ok()) return o.error();
    observers.push_back(std::move(*o));
  }
  // results[mode][repeat] = the bench report of that run.
  std::vector<std::vector<kvmbench::BenchReport>> runs(modes.size());
  std::vector<std::vector<int64_t>> seen(modes.size());
  std::vector<std::vector<double>> cpu(modes.size());
  for (uint64_t rep = 0; rep < repeats; ++rep) {
    for (size_t m = 0; m < modes.size(); ++m) {
      if (!skip[m].empty()) continue;
      if (Status st = observers[m]->Start(); !st.ok()) {
        skip[m] = st.error().message;
        continue;
      }
      auto report = kvmbench::RunBench(options);
      auto n = observers[m]->Stop();
      if (!report.ok()) return report.error();
      seen[m].push_back(n.ok() ? *n : -1);
      cpu[m].push_back(observers[m]->CpuSeconds());
      runs[m].push_back(std::move(*report));
    }
  }
  const kvmbench::BenchReport* any = nullptr;
  for (const auto& r : runs)
    if (!r.empty()) any = &r.front();
  for (size_t m = 0; m < modes.size(); ++m)
    if (!skip[m].empty()) out.mode_skips.push_back(modes[m] + ": " + skip[m]);
  if (!any) return out;
  out.vendor_id = any->vendor_id;
  out.kernel_release = any->kernel_release;
  out.kvm_module = any->kvm_module;
  out.emulated_guest = any->emulated_guest;
  for (size_t t = 0; t < any->results.size(); ++t) {
    ObservedTest ot;
    ot.name = any->results[t].name;
    ot.skip_reason = any->results[t].skip_reason;
    ot.iterations = any->results[t].iterations;
    double none_median = -1;
    bool exits_set = false;
    for (size_t m = 0; m < modes.size(); ++m) {
      ObservedMode om;
      om.mode = modes[m];
      om.skip_reason = skip[m];
      for (size_t rep = 0; rep < runs[m].size(); ++rep) {
        const kvmbench::BenchResult& r = runs[m][rep].results[t];
        om.cycles_per_iter.push_back(r.cycles_per_iter);
        om.seen_exits.push_back(seen[m][rep]);
        om.cpu_s.push_back(cpu[m][rep]);
        if ((!exits_set || modes[m] == "none") && r.exits_known && r.iterations > 0) {
          ot.exits_per_iter = static_cast<double>(r.exits) / static_cast<double>(r.iterations);
          exits_set = modes[m] == "none";
        }
      }
      if (!om.cycles_per_iter.empty()) {
        om.median = Median(om.cycles_per_iter);
        om.min = *std::min_element(om.cycles_per_iter.begin(), om.cycles_per_iter.end());
        om.max = *std::max_element(om.cycles_per_iter.begin(), om.cycles_per_iter.end());
        if (modes[m] == "none") none_median = om.median;
      }
      ot.modes.push_back(std::move(om));
    }
    // An emulated guest (kvm_pvm) exits to KVM's run loop once per batch of instructions: a cost per
    // such "exit" would be meaningless, so only cycles/iter are shown there.
    if (none_median >= 0 && ot.exits_per_iter > 0 && !out.emulated_guest) {
      for (ObservedMode& om : ot.modes) {
        if (om.cycles_per_iter.empty()) continue;
        om.added_cycles_per_exit = (om.median - none_median) / ot.exits_per_iter;
        om.has_added = true;
      }
    }
    out.tests.push_back(std::move(ot));
  }
  return out;
}

std::string RenderObservedBenchText(const ObservedBench& b) {
  std::string s =
      fmt::format("exitscope bench --observe: {} repeats per mode, interleaved; {} {} {}{}\n", b.repeats, b.vendor_id,
                  b.kvm_module, b.kernel_release, b.emulated_guest ? " (guest emulated: no hardware exits)" : "");
  s += "cycles/iter: median of the repeats [min .. max]; +cyc/exit: against none, per KVM exit\n\n";
  s += fmt::format("{:<18} {:<16} {:>12} {:>25} {:>11} {:>10}\n", "test", "observer", "cycles/iter", "spread",
                   "+cyc/exit", "seen/run");
  for (const ObservedTest& t : b.tests) {
    if (!t.skip_reason.empty()) {
      s += fmt::format("{:<18} skipped: {}\n", t.name, t.skip_reason);
      continue;
    }
    for (const ObservedMode& m : t.modes) {
      if (!m.skip_reason.empty()) continue;
      std::string added = m.has_added ? fmt::format("{:+.0f}", m.added_cycles_per_exit) : "-";
      std::string seen = "-";
      if (!m.seen_exits.empty() && m.seen_exits.back() >= 0) seen = std::to_string(m.seen_exits.back());
      s += fmt::format("{:<18} {:<16} {:>12.0f} {:>25} {:>11} {:>10}\n", t.name, m.mode, m.median,
                       fmt::format("[{:.0f} .. {:.0f}]", m.min, m.max), added, seen);
    }
  }
  for (const std::string& skip : b.mode_skips) s += "skipped " + skip + "\n";
  return s;
}

nlohmann::ordered_json ObservedBenchJson(const ObservedBench& b) {
  nlohmann::ordered_json j;
  TagSchema(&j, "bench-observe", 1);
  j["vendor_id"] = b.vendor_id;
  j["kernel_release"] = b.kernel_release;
  j["kvm_module"] = b.kvm_module;
  j["emulated_guest"] = b.emulated_guest;
  j["repeats"] = b.repeats;
  nlohmann::ordered_json skips = nlohmann::ordered_json::object();
  for (const std::string& s : b.mode_skips) {
    size_t colon = s.find(": ");
    skips[s.substr(0, colon)] = s.substr(colon + 2);
  }
  j["skipped_modes"] = std::move(skips);
  nlohmann::ordered_json tests = nlohmann::ordered_json::array();
  for (const ObservedTest& t : b.tests) {
    nlohmann::ordered_json o = {{"test", t.name}, {"iterations", t.iterations}, {"exits_per_iter", t.exits_per_iter}};
    if (!t.skip_reason.empty()) o["skip_reason"] = t.skip_reason;
    nlohmann::ordered_json ms = nlohmann::ordered_json::array();
    for (const ObservedMode& m : t.modes) {
      if (!m.skip_reason.empty()) continue;
      nlohmann::ordered_json mo = {{"mode", m.mode}, {"cycles_per_iter", m.median}, {"min", m.min},
                                   {"max", m.max},   {"runs", m.cycles_per_iter},   {"seen_exits", m.seen_exits}};
      if (m.has_added) mo["added_cycles_per_exit"] = m.added_cycles_per_exit;
      if (!m.cpu_s.empty() && m.cpu_s.front() >= 0) mo["observer_cpu_s"] = m.cpu_s;
      ms.push_back(std::move(mo));
    }
    o["modes"] = std::move(ms);
    tests.push_back(std::move(o));
  }
  j["tests"] = std::move(tests);
  return j;
}

}  // namespace exitscope
