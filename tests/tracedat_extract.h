// A test-only extractor of a trace-cmd v7 zstd trace.dat: everything TraceDatWriter needs to write
// the same recording again (metadata, each CPU's ring-buffer pages, CPUSTAT texts), so tests can
// re-write real pages with other metadata (tracedat_writer_test: byte-for-byte against trace-cmd;
// trace_clock_test: other clocks and options). Header-only; not the project's reader.
#pragma once

#include <gtest/gtest.h>
#include <zstd.h>

#include <cstring>
#include <string>
#include <vector>

#include "sinks/tracedat_writer.h"

namespace exitscope::testing {

template <typename T>
T Get(const std::string& b, size_t off) {
  T v{};
  if (off + sizeof(T) <= b.size()) std::memcpy(&v, b.data() + off, sizeof(T));
  return v;
}

inline std::string Unzstd(const std::string& b, size_t off, uint32_t csize, uint32_t usize) {
  std::string out(usize, '\0');
  size_t n = ZSTD_decompress(out.data(), usize, b.data() + off, csize);
  EXPECT_FALSE(ZSTD_isError(n));
  return out;
}

// Everything our writer needs, taken from a trace-cmd v7 zstd file.
struct Extracted {
  TraceDatMeta meta;
  std::vector<std::string> cpu_pages;  // concatenated pages per CPU
  std::vector<std::string> cpustats;
};

// A section's uncompressed body (compressed sections: {csize, usize, zstd frame}).
inline std::string SectionBody(const std::string& f, uint64_t off, uint16_t* id) {
  *id = Get<uint16_t>(f, off);
  uint16_t flags = Get<uint16_t>(f, off + 2);
  uint64_t size = Get<uint64_t>(f, off + 8);
  if (flags & 1) return Unzstd(f, off + 24, Get<uint32_t>(f, off + 16), Get<uint32_t>(f, off + 20));
  return f.substr(off + 16, size);
}

inline Extracted Extract(const std::string& f) {
  Extracted x;
  size_t p = 10;
  EXPECT_EQ(f.substr(p, 2), std::string("7\0", 2));
  p += 2 + 2;
  x.meta.page_size = Get<uint32_t>(f, p);
  p += 4;
  p += std::strlen(f.data() + p) + 1;  // "zstd"
  p += std::strlen(f.data() + p) + 1;  // version
  uint64_t opt_off = Get<uint64_t>(f, p);
  while (opt_off) {
    uint16_t id;
    std::string opts = SectionBody(f, opt_off, &id);
    EXPECT_EQ(id, 0);
    opt_off = 0;
    for (size_t q = 0; q + 6 <= opts.size();) {
      uint16_t oid = Get<uint16_t>(opts, q);
      uint32_t osz = Get<uint32_t>(opts, q + 2);
      std::string d = opts.substr(q + 6, osz);
      q += 6 + osz;
      auto str = [&d] { return std::string(d.c_str()); };
      switch (oid) {
        case 0: opt_off = Get<uint64_t>(d, 0); break;
        case 2: x.cpustats.push_back(str()); break;
        case 4: x.meta.trace_clock = str(); break;
        case 5: x.meta.uname = str(); break;
        case 8: x.meta.cpu_count = Get<uint32_t>(d, 0); break;
        case 9: x.meta.version = str(); break;
        case 3: {  // BUFFER
          size_t r = 8;
          x.meta.instance_name = d.c_str() + r;
          r += x.meta.instance_name.size() + 1;
          x.meta.clock = d.c_str() + r;
          r += x.meta.clock.size() + 1 + 4;  // + page size
          uint32_t cpus = Get<uint32_t>(d, r);
          r += 4;
          x.cpu_pages.resize(cpus);
          for (uint32_t i = 0; i < cpus; ++i, r += 20) {
            uint32_t cpu = Get<uint32_t>(d, r);
            // The listed CPUs need not be 0..n-1 (dual-5000 lists CPU 1 alone).
            if (cpu >= x.cpu_pages.size()) x.cpu_pages.resize(cpu + 1);
            uint64_t coff = Get<uint64_t>(d, r + 4);
            uint32_t chunks = Get<uint32_t>(f, coff);
            for (uint64_t c = coff + 4; chunks-- > 0;) {
              uint32_t cs = Get<uint32_t>(f, c), us = Get<uint32_t>(f, c + 4);
              x.cpu_pages[cpu] += Unzstd(f, c + 8, cs, us);
              c += 8 + cs;
            }
          }
          break;
        }
        case 16: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          uint64_t n = Get<uint64_t>(b, 12);
          x.meta.header_page = b.substr(20, n);
          size_t r = 20 + n + 13;
          x.meta.header_event = b.substr(r + 8, Get<uint64_t>(b, r));
          break;
        }
        case 17: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          size_t r = 4;
          for (uint32_t n = Get<uint32_t>(b, 0); n-- > 0;) {
            uint64_t sz = Get<uint64_t>(b, r);
            x.meta.ftrace_formats.push_back(b.substr(r + 8, sz));
            r += 8 + sz;
          }
          break;
        }
        case 18: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          size_t r = 4;
          for (uint32_t s = Get<uint32_t>(b, 0); s-- > 0;) {
            TraceDatSystem sys;
            sys.name = b.c_str() + r;
            r += sys.name.size() + 1;
            uint32_t n = Get<uint32_t>(b, r);
            r += 4;
            for (uint32_t k = 0; k < n; ++k) {
              uint64_t sz = Get<uint64_t>(b, r);
              sys.formats.push_back(b.substr(r + 8, sz));
              r += 8 + sz;
            }
            x.meta.systems.push_back(std::move(sys));
          }
          break;
        }
        case 19: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          x.meta.kallsyms = b.substr(4, Get<uint32_t>(b, 0));
          break;
        }
        case 20: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          x.meta.printk_formats = b.substr(4, Get<uint32_t>(b, 0));
          break;
        }
        case 21: {
          std::string b = SectionBody(f, Get<uint64_t>(d, 0), &id);
          x.meta.cmdlines = b.substr(8, Get<uint64_t>(b, 0));
          break;
        }
        default: break;
      }
    }
  }
  return x;
}

}  // namespace exitscope::testing
