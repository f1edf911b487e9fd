#include "live/live_recorder.h"

#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <chrono>
#include <fstream>
#include <map>
#include <sstream>

#include "live/stop_signal.h"
#include "live/vm_map_collector.h"
#include "sources/tracedat/guest_option.h"

namespace exitscope {
namespace {

// How long the loop waits for the ring buffer before draining anyway and checking the clock.
constexpr int kPollTimeoutMs = 50;

double Seconds(const timeval& tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The clock in use is the bracketed one of trace_clock ("local [global] counter …").
std::string SelectedClock(const std::string& trace_clock) {
  size_t a = trace_clock.find('['), b = trace_clock.find(']');
  if (a == std::string::npos || b == std::string::npos || b < a) return "local";
  return trace_clock.substr(a + 1, b - a - 1);
}

}  // namespace

uint64_t RecordSummary::TotalLost() const {
  uint64_t n = 0;
  for (const auto& l : loss) n += l.Lost();
  return n;
}

Result<TraceDatMeta> CollectTraceDatMeta(const TracefsInstance& instance, bool kallsyms) {
  TraceDatMeta m;
  m.page_size = instance.page_size();
  m.cpu_count = static_cast<uint32_t>(instance.cpu_count());
  auto hp = instance.Read("events/header_page", true);
  if (!hp.ok()) return hp.error();
  auto he = instance.Read("events/header_event", true);
  if (!he.ok()) return he.error();
  m.header_page = *hp;
  m.header_event = *he;
  // Formats grouped by system, in the order the events were enabled.
  std::map<std::string, size_t> sys_index;
  for (const auto& e : instance.events()) {
    auto [it, fresh] = sys_index.emplace(e.system, m.systems.size());
    if (fresh) m.systems.push_back({e.system, {}});
    m.systems[it->second].formats.push_back(e.format);
  }
  // ftrace's own formats let readers print the internal events (markers, printk) too.
  if (DIR* d = ::opendir((instance.tracefs() + "/events/ftrace").c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.' || e->d_type != DT_DIR) continue;
      auto f = instance.Read(std::string("events/ftrace/") + e->d_name + "/format", true);
      if (f.ok()) m.ftrace_formats.push_back(*f);
    }
    ::closedir(d);
  }
  if (auto p = instance.Read("printk_formats", true); p.ok()) m.printk_formats = *p;
  if (kallsyms) m.kallsyms = ReadSmallFile("/proc/kallsyms");
  utsname u{};
  if (::uname(&u) == 0) {
    m.uname = std::string(u.sysname) + " " + u.nodename + " " + u.release + " " + u.machine;
  }
  if (auto tc = instance.Read("trace_clock"); tc.ok()) {
    m.trace_clock = *tc;
    m.clock = SelectedClock(*tc);
  }
  m.version = std::string("exitscope ") + EXITSCOPE_VERSION;
  // Readers know our instance's data as the top buffer: the file holds only this one.
  m.instance_name = "";
  return m;
}

std::string CollectCmdlines(const TracefsInstance& instance, int pid) {
  std::string out;
  if (auto c = instance.Read("saved_cmdlines", true); c.ok()) out = *c;
  if (pid > 0) {
    if (auto tids = ThreadsOf(pid); tids.ok()) {
      for (int t : *tids) {
        std::string comm = ReadSmallFile("/proc/" + std::to_string(pid) + "/task/" + std::to_string(t) + "/comm");
        while (!comm.empty() && comm.back() == '\n') comm.pop_back();
        if (!comm.empty()) out += std::to_string(t) + " " + comm + "\n";
      }
    }
  }
  return out;
}

namespace {

// The instance's events (the defaults when none asked) and pid filter, named in the summary.
Status SetUpInstance(TracefsInstance& instance, const RecordOptions& options, const std::vector<int>& tids,
                     RecordSummary* sum) {
  bool defaults = options.events.empty();
  if (Status s = instance.EnableEvents(defaults ? DefaultExitEvents() : options.events, defaults); !s) return s;
  for (const auto& e : instance.events()) sum->events.push_back(e.system + ":" + e.name);
  if (!tids.empty()) {
    if (Status s = instance.FilterPids(tids); !s) return s;
  }
  return {};
}

// Pages to the sink until SIGINT/SIGTERM or --duration, the VM map rescanned between polls.
Status CaptureUntilStop(TracePipeReader& reader, VmMapCollector& vm_map, const TracePipeReader::Sink& sink,
                        const RecordOptions& options, std::chrono::steady_clock::time_point t0) {
  while (!StopRequested()) {
    double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (options.duration_s > 0 && elapsed >= options.duration_s) break;
    int timeout = kPollTimeoutMs;
    if (options.duration_s > 0) {
      timeout = std::max(1, std::min(timeout, static_cast<int>((options.duration_s - elapsed) * 1000)));
    }
    auto n = reader.Poll(timeout, sink);
    if (!n.ok()) return n.error();
    vm_map.Scan();
  }
  return {};
}

// The losses, events read (from the stats text), pages and sizes of a finished recording.
void FillFigures(const TracePipeReader& reader, const TraceDatWriter& writer, const std::vector<std::string>& stats,
                 const std::string& output, RecordSummary* sum) {
  sum->loss = reader.loss();
  // Tracing is off and the buffer drained: an event still in it is one the file does not hold.
  for (CpuLoss& l : sum->loss) l.unread = l.entries;
  for (const auto& st : stats) {
    size_t at = st.find("read events:");
    if (at != std::string::npos) sum->events_read += std::strtoull(st.c_str() + at + 12, nullptr, 10);
  }
  sum->pages = writer.pages_written();
  sum->bytes = writer.bytes_uncompressed();
  struct stat st {};
  if (::stat(output.c_str(), &st) == 0) sum->file_bytes = static_cast<uint64_t>(st.st_size);
}

}  // namespace

Result<RecordSummary> RunRecord(const RecordOptions& options) {
  RecordSummary sum;
  std::string tracefs = options.tracefs;
  if (tracefs.empty()) {
    auto t = FindTracefs();
    if (!t.ok()) return t.error();
    tracefs = *t;
  }
  std::vector<int> tids;
  if (options.pid > 0) {
    auto t = ThreadsOf(options.pid);
    if (!t.ok()) return t.error();
    tids = *t;
  }
  auto inst = TracefsInstance::Create(tracefs, options.buffer_size_kb);
  if (!inst.ok()) return inst.error();
  TracefsInstance& instance = **inst;
  sum.instance_dir = instance.dir();
  if (Status s = SetUpInstance(instance, options, tids, &sum); !s) return s.error();
  auto meta = CollectTraceDatMeta(instance, options.kallsyms);
  if (!meta.ok()) return meta.error();
  auto writer = TraceDatWriter::Create(options.output, std::move(*meta));
  if (!writer.ok()) return writer.error();
  auto reader = TracePipeReader::Open(instance);
  if (!reader.ok()) return reader.error();

  rusage ru0{};
  ::getrusage(RUSAGE_SELF, &ru0);
  auto t0 = std::chrono::steady_clock::now();
  // The VMs as this host knows them now, for offline reports to name them as live views do.
  std::unique_ptr<VmMapCollector> vm_map = VmMapCollector::ForInstance(instance);
  const TracePipeReader::Sink sink = [&](int cpu, std::span<const uint8_t> page) {
    vm_map->AddPages(page);
    return (*writer)->AddPages(static_cast<uint32_t>(cpu), page);
  };
  if (Status s = instance.SetTracingOn(true); !s) return s.error();
  vm_map->Scan();
  if (options.on_started) options.on_started(instance.dir());
  if (Status s = CaptureUntilStop(**reader, *vm_map, sink, options, t0); !s) return s.error();
  sum.stop_signal = StopSignal();
  if (Status s = instance.SetTracingOn(false); !s) return s.error();
  auto drained = (*reader)->Drain(sink);
  if (!drained.ok()) return drained.error();
  (*reader)->UpdateStats();
  sum.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  (*writer)->set_cmdlines(CollectCmdlines(instance, options.pid));
  for (const auto& vm : vm_map->Vms()) (*writer)->add_option(kOptGuest, EncodeGuestOption(vm.guest, &vm.recorded));
  std::vector<std::string> stats = (*reader)->stats_text();
  if (Status s = (*writer)->Finish(stats); !s) return s.error();
  FillFigures(**reader, **writer, stats, options.output, &sum);
  rusage ru1{};
  ::getrusage(RUSAGE_SELF, &ru1);
  sum.cpu_user_s = Seconds(ru1.ru_utime) - Seconds(ru0.ru_utime);
  sum.cpu_sys_s = Seconds(ru1.ru_stime) - Seconds(ru0.ru_stime);
  // Open trace_pipe_raw files hold the instance busy (rmdir: EBUSY): close them first.
  reader.value().reset();
  if (Status s = instance.Remove(); !s) return s.error();
  return sum;
}

}  // namespace exitscope
