// What the damaged-input tests share (issue 19): a real trace from ../shared/traces read into memory,
// a few facts about where a trace.dat v7 keeps its options and CPU data (found by walking the file,
// never by fixed offsets), one damaged copy written to a temp file and `exitscope` run on it.
// Header-only; tests/ is not a library.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "test_util.h"

namespace exitscope::testing {

inline const std::string kSharedTraces = std::string(EXITSCOPE_SHARED_DIR) + "/traces/";

inline std::string ReadShared(const std::string& rel) {
  std::string b = ReadFile(kSharedTraces + rel);
  EXPECT_FALSE(b.empty()) << rel << " missing";
  return b;
}

template <typename T>
T LoadAt(const std::string& b, size_t off) {
  T v{};
  if (off + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}
template <typename T>
void StoreAt(std::string* b, size_t off, T v) {
  ASSERT_LE(off + sizeof(T), b->size());
  std::memcpy(b->data() + off, &v, sizeof(T));
}

// trace.dat v7 (trace-cmd.dat.v7.5.txt): the uncompressed options sections in chain order, each
// option's file offset, and the BUFFER option's per-CPU entries.
struct V7Map {
  struct Option {
    uint16_t id;
    uint32_t size;
    size_t at;  // file offset of the option's u16 id
  };
  struct Cpu {
    uint32_t cpu;
    uint64_t offset, size;
    size_t entry_at;  // file offset of the BUFFER option's {u32 cpu, u64 offset, u64 size}
  };
  std::vector<size_t> sections;
  std::vector<Option> options;
  std::vector<Cpu> cpus;
  const Option* Find(uint16_t id, size_t nth = 0) const {
    for (const Option& o : options)
      if (o.id == id && nth-- == 0) return &o;
    return nullptr;
  }
};

inline V7Map MapV7(const std::string& f) {
  V7Map m;
  size_t p = 10 + 2 + 2 + 4;           // magic, "7\0", endian + long size, page size
  p += std::strlen(f.data() + p) + 1;  // compression name
  p += std::strlen(f.data() + p) + 1;  // its version
  uint64_t sec = LoadAt<uint64_t>(f, p);
  while (sec && m.sections.size() < 16) {
    m.sections.push_back(sec);
    EXPECT_EQ(LoadAt<uint16_t>(f, sec + 2) & 1, 0) << "compressed options section";
    uint64_t size = LoadAt<uint64_t>(f, sec + 8);
    uint64_t next = 0;
    for (size_t q = sec + 16; q + 6 <= sec + 16 + size;) {
      V7Map::Option o{LoadAt<uint16_t>(f, q), LoadAt<uint32_t>(f, q + 2), q};
      m.options.push_back(o);
      if (o.id == 3) {  // BUFFER: u64 section, name, clock, u32 page size, u32 cpus, entries
        size_t r = q + 6 + 8;
        r += std::strlen(f.data() + r) + 1;
        r += std::strlen(f.data() + r) + 1;
        uint32_t n = LoadAt<uint32_t>(f, r + 4);
        r += 8;
        for (uint32_t i = 0; i < n; ++i, r += 20)
          m.cpus.push_back({LoadAt<uint32_t>(f, r), LoadAt<uint64_t>(f, r + 4), LoadAt<uint64_t>(f, r + 12), r});
      }
      if (o.id == 0) {
        next = LoadAt<uint64_t>(f, q + 6);
        break;
      }
      q += 6 + o.size;
    }
    sec = next;
  }
  return m;
}

struct DamageRun {
  int status = -1;
  std::string out;  // stdout and stderr
};

// Writes `bytes` to a temp file named `name` and runs `exitscope <args> FILE` on it.
inline DamageRun RunOnDamaged(const std::string& name, const std::string& bytes, const std::string& args) {
  std::string path = ::testing::TempDir() + "/exitscope-damage-" + std::to_string(getpid()) + "-" + name;
  EXPECT_TRUE(WriteFile(path, bytes));
  auto r = RunCommand(std::string(EXITSCOPE_BINARY) + " " + args + " '" + path + "' 2>&1");
  unlink(path.c_str());
  return {r.status, r.out};
}

// Replaces the first `from` after `after` with the same-length `to` (the file keeps every offset).
inline void ReplaceSameLength(std::string* b, const std::string& after, const std::string& from,
                              const std::string& to) {
  ASSERT_EQ(from.size(), to.size());
  size_t a = b->find(after);
  ASSERT_NE(a, std::string::npos) << after;
  size_t at = b->find(from, a);
  ASSERT_NE(at, std::string::npos) << from;
  b->replace(at, from.size(), to);
}

inline bool Has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace exitscope::testing
