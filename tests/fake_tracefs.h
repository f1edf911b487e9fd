// A tracefs stand-in in a temporary directory, for TracefsInstance and LivePageDecoder tests on any
// machine: the root holds events/header_page, saved_cmdlines and events/<system>/<event>/format; its
// InstanceDirOps do what the kernel does on mkdir/rmdir under instances/ (kernel/trace/trace.c
// instance_mkdir fills the new directory with tracing_on, per_cpu/cpuN/, events/…/enable and the
// format files; instance_rmdir frees it whole).
#pragma once

#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "sources/live/tracefs_instance.h"

namespace exitscope::testing {

// The kernel's events/header_page text (kernel/trace/ring_buffer.c ring_buffer_print_page_header,
// 64-bit): 16-byte page header, 4080 bytes of data.
inline constexpr const char* kHeaderPage64 =
    "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n"
    "\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n"
    "\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n"
    "\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

inline constexpr int kFakeCpus = 2;

inline void WriteText(const std::filesystem::path& p, const std::string& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

inline std::string ReadText(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class FakeTracefs {
 public:
  FakeTracefs()
      : root_(std::filesystem::temp_directory_path() / ("exitscope-fake-tracefs-" + std::to_string(::getpid()))) {
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_ / "instances");
    WriteText(root_ / "events/header_page", kHeaderPage64);
  }
  ~FakeTracefs() { std::filesystem::remove_all(root_); }

  std::string root() const { return root_.string(); }
  // Adds events/<system>/<name>/format at the root (what the running kernel offers).
  void AddEvent(const std::string& system, const std::string& name, const std::string& format) {
    WriteText(root_ / "events" / system / name / "format", format);
  }
  void SetCmdlines(const std::string& text) { WriteText(root_ / "saved_cmdlines", text); }

  static const InstanceDirOps& Ops() {
    static constexpr InstanceDirOps kOps{Make, Remove};
    return kOps;
  }

 private:
  // mkdir under instances/: the directory, then what the kernel puts in it.
  static int Make(const char* path) {
    namespace fs = std::filesystem;
    fs::path dir(path);
    std::error_code ec;
    if (fs::exists(dir)) {
      errno = EEXIST;
      return -1;
    }
    if (!fs::create_directory(dir, ec)) {
      errno = ec.value();
      return -1;
    }
    for (const char* f : {"tracing_on", "set_event_notrace_pid", "set_event_pid", "buffer_size_kb",
                          "options/event-fork", "events/enable"}) {
      WriteText(dir / f, "");
    }
    WriteText(dir / "trace_clock", "[local] global counter uptime perf mono mono_raw boot\n");
    WriteText(dir / "tracing_on", "1\n");  // a new instance starts tracing
    for (int cpu = 0; cpu < kFakeCpus; ++cpu) {
      fs::create_directories(dir / "per_cpu" / ("cpu" + std::to_string(cpu)));
    }
    fs::path events = dir.parent_path().parent_path() / "events";
    for (const auto& sys : fs::directory_iterator(events)) {
      if (!sys.is_directory()) continue;
      for (const auto& ev : fs::directory_iterator(sys.path())) {
        fs::path to = dir / "events" / sys.path().filename() / ev.path().filename();
        WriteText(to / "format", ReadText(ev.path() / "format"));
        WriteText(to / "enable", "0\n");
      }
    }
    return 0;
  }
  // rmdir of an instance: the kernel frees it with everything in it.
  static int Remove(const char* path) {
    std::error_code ec;
    if (!std::filesystem::exists(path)) {
      errno = ENOENT;
      return -1;
    }
    std::filesystem::remove_all(path, ec);
    if (ec) {
      errno = ec.value();
      return -1;
    }
    return 0;
  }

  std::filesystem::path root_;
};

}  // namespace exitscope::testing
