// Helpers the tests share: run a shell command and read its stdout (peers such as trace-cmd and
// gzip, or our own binary), read a whole file, build a synthetic KvmEvent or ExitSample. Header-only; tests/ is
// not a library.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "model/exit_sample.h"
#include "model/kvm_event.h"

namespace exitscope::testing {

struct CommandResult {
  std::string out;  // stdout
  int status = -1;  // exit code; -1 when killed or not run
};

inline CommandResult RunCommand(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 65536> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline std::string ReadCommand(const std::string& cmd) { return RunCommand(cmd).out; }

inline std::string ReadGzip(const std::string& path) { return ReadCommand("gzip -dc '" + path + "'"); }

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A counter of this process's I/O so far (/proc/self/io: every thread, live or gone), e.g. "syscr"
// (read calls) or "rchar" (bytes read by read(2)/pread(2)); 0 when the kernel shows none.
inline uint64_t ProcSelfIo(const std::string& key) {
  std::string io = ReadFile("/proc/self/io");
  size_t at = io.find(key + ": ");
  return at == std::string::npos ? 0 : std::stoull(io.substr(at + key.size() + 2));
}

// Writes `bytes` to `path` (replacing it); false when it could not.
inline bool WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

// A synthetic exit/entry/detail event for pairer and report tests.
inline KvmEvent MakeKvmEvent(EventKind kind, uint64_t ts_ns, int cpu, int tid, uint32_t reason, Isa isa) {
  KvmEvent e;
  e.kind = kind;
  e.ts_ns = ts_ns;
  e.cpu = cpu;
  e.tid = tid;
  e.reason = reason;
  e.isa = isa;
  return e;
}

// A synthetic paired exit (an ExitSample) for sink tests: thread, ISA and raw reason, handled in
// dur_ns from ts_ns.
inline ExitSample MakeExitSample(int32_t tid, Isa isa, uint32_t reason, uint64_t dur_ns, uint64_t ts_ns = 0) {
  ExitSample s;
  s.tid = tid;
  s.isa = isa;
  s.reason = reason;
  s.dur_ns = dur_ns;
  s.ts_ns = ts_ns;
  return s;
}

}  // namespace exitscope::testing
