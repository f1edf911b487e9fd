// bench_floor: what this machine allows for a file, on all cores — the floor every exitscope figure
// is stated as a multiple of (bench/compare_peers.sh runs it beside the peers).
//   bench_floor touch FILE   map FILE and read every byte (threads sum contiguous parts): the cost of
//                            merely looking at a perf.data / uncompressed trace.dat from the page cache
//   bench_floor read FILE    the same through pread(2) into a 1 MB buffer per thread (no mapping)
//   bench_floor zstd FILE    FILE cut in 1 MB chunks, each compressed (level 3, untimed), then every
//   bench_floor zlib FILE    chunk decompressed (zlib: level 6): what a compressed trace.dat costs.
//                            zlib chunks are inflated with libdeflate, the fastest inflater Debian
//                            ships (what exitscope uses; zlib's own uncompress took 0.64 s of CPU for
//                            the ×27 trace in 40 KB chunks, libdeflate less than half of that)
//   bench_floor walk FILE    a file-mode perf.data read as `read` does, every record walked and each
//                            sample's time, thread and tracepoint type looked at: the least any
//                            reader of its events does (parts cut at record boundaries, one a thread)
//   bench_floor zstd-walk FILE   a version 6 trace.dat packed as `zstd` / `zlib` pack it, and after
//   bench_floor zlib-walk FILE   each chunk is decompressed every event of its ring-buffer pages
//                            walked the same way: the least a reader of a compressed trace.dat does
//                            The walk keeps, per event, what exit pairing keeps at the least: the
//                            thread's previous time, replaced, and the time since summed by type.
//                            It prints how many events it saw (a check that it saw them all).
//   bench_floor merge FILE   a version 6 trace.dat's per-CPU events (walked first, untimed) merged into
//                            one time order on one thread, each then walked as above: what pairing
//                            a thread's exit and entry across CPUs costs beyond the walk (one thread,
//                            whatever -j says; a report spends it beside the walk's CPU time). On a
//                            perf.data: each round sorted and merged with what the one before left,
//                            as perf and exitscope order its samples (the sort could run on other
//                            cores; here it is timed with the merge).
//   bench_floor cores FILE   the first 32 MB of FILE decompressed (zstd, 1 MB chunks) on each core in
//                            turn, pinned: how fast each core is now. On this VM one vCPU is at times
//                            ~1.4x slower than the other for minutes (a busy sibling thread, a lower
//                            clock), and every figure with it; also the round trip of one cache line
//                            between two threads.
// Options: -j N threads (default: one per core), --runs N (best of, default 3), --chunk BYTES (zstd,
// zlib: 1 MB by default; trace-cmd compresses 10 pages a chunk, 40960 bytes of 4 KB pages. Each
// chunk is a frame of its own: on the ×27 trace zlib took 0.33 s in 40 KB chunks against 0.25 s in
// 1 MB ones, zstd 0.098 s against 0.096 s).
// Out: one line "floor MODE FILE: BYTES bytes, N threads, S s (G GB/s), cpu C s[, E events walked]"
// (the best run's wall and its CPU time, user + system of all threads).
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "base/byte_reader.h"  // header only: LoadLe16/32/64
#include "base/sorted_runs.h"  // header only: SortAscendingRuns, as the perf.data reader sorts a round

using exitscope::LoadLe16;
using exitscope::LoadLe32;
using exitscope::LoadLe64;

namespace {

constexpr size_t kChunk = 1 << 20;

double Seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

double CpuSeconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

double best_cpu = 0;  // CPU time (user + system, all threads) of the fastest run

// Runs fn(thread index) on n threads and returns the wall time; keeps the fastest run's CPU time.
template <typename Fn>
double OnThreads(unsigned n, Fn fn, double best_wall) {
  double c0 = CpuSeconds();
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (unsigned i = 0; i < n; ++i) threads.emplace_back(fn, i);
  for (auto& t : threads) t.join();
  double wall = Seconds(t0);
  if (wall < best_wall) best_cpu = CpuSeconds() - c0;
  return wall;
}

std::atomic<uint64_t> sink{0};  // keeps the sums alive

uint64_t Sum(const uint8_t* p, size_t n) {
  uint64_t s = 0, v;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::memcpy(&v, p + i, 8);
    s += v;
  }
  for (; i < n; ++i) s += p[i];
  return s;
}

std::vector<uint8_t> ReadWhole(int fd, size_t size) {
  std::vector<uint8_t> buf(size);
  for (size_t done = 0; done < size;) {
    ssize_t r = ::pread(fd, buf.data() + done, size - done, static_cast<off_t>(done));
    if (r <= 0) {
      std::perror("pread");
      std::exit(74);
    }
    done += static_cast<size_t>(r);
  }
  return buf;
}

// What a reader of events does at the least, shaped as exit pairing is: per event, its thread's
// previous time is looked up and replaced, and the time since is summed by event type.
struct Walker {
  std::vector<uint64_t> last = std::vector<uint64_t>(1 << 16);  // by tid (low bits)
  uint64_t sum[1024] = {};                                      // by type id (low bits)
  uint64_t events = 0;

  void On(uint64_t ts, uint32_t tid, uint16_t type) {
    uint64_t& prev = last[tid & 0xffff];
    sum[type & 1023] += ts - prev;
    prev = ts;
    ++events;
  }
  uint64_t Checksum() const {
    uint64_t c = 0;
    for (uint64_t v : sum) c += v;
    return c;
  }
};

}  // namespace

// ---- perf.data: the data section's records in place, sample layout from the first attr ----

struct PerfLayout {
  uint64_t data_offset = 0, data_size = 0;
  size_t tid_at = 0, time_at = 0, raw_at = 0;  // byte offsets inside a sample's body
};

// False (with a message) for what this floor does not walk: pipe mode, attrs of different
// sample types, READ or CALLCHAIN before RAW, no TID/TIME/RAW.
bool PerfLayoutOf(const std::vector<uint8_t>& file, PerfLayout* out) {
  // struct perf_file_header: magic, size, attr_size, attrs{offset,size}, data{offset,size}, ...
  if (file.size() < 72 || std::memcmp(file.data(), "PERFILE2", 8) != 0 || LoadLe64(file.data() + 8) < 72) {
    std::fprintf(stderr, "bench_floor: not a file-mode perf.data\n");
    return false;
  }
  const uint64_t attr_size = LoadLe64(file.data() + 16), attrs_at = LoadLe64(file.data() + 24),
                 attrs_size = LoadLe64(file.data() + 32);
  out->data_offset = LoadLe64(file.data() + 40);
  out->data_size = LoadLe64(file.data() + 48);
  auto inside = [&](uint64_t at, uint64_t n) { return at <= file.size() && n <= file.size() - at; };
  if (attr_size < 40 || attrs_size < attr_size || !inside(attrs_at, attrs_size) ||
      !inside(out->data_offset, out->data_size)) {
    std::fprintf(stderr, "bench_floor: perf.data header out of bounds\n");
    return false;
  }
  enum : uint64_t {
    kIp = 1,
    kTid = 2,
    kTime = 4,
    kAddr = 8,
    kRead = 16,
    kChain = 32,
    kId = 64,
    kCpu = 128,
    kPeriod = 256,
    kStream = 512,
    kRaw = 1024,
    kIdentifier = 1 << 16
  };
  // The tracepoints' sample_type (perf_event_attr.sample_type), one for all; the attrs without RAW
  // (perf's dummy event) write no samples that matter here.
  uint64_t st = 0;
  for (uint64_t at = attrs_at; at + attr_size <= attrs_at + attrs_size; at += attr_size) {
    const uint64_t t = LoadLe64(file.data() + at + 24);
    if (!(t & kRaw)) continue;
    if (st && t != st) {
      std::fprintf(stderr, "bench_floor: tracepoints of different sample types\n");
      return false;
    }
    st = t;
  }
  if ((st & (kRead | kChain)) || !(st & kTid) || !(st & kTime) || !(st & kRaw)) {
    std::fprintf(stderr, "bench_floor: sample_type %#llx not walked (needs TID, TIME, RAW; no READ, CALLCHAIN)\n",
                 static_cast<unsigned long long>(st));
    return false;
  }
  size_t at = 0;
  for (uint64_t bit : {kIdentifier, kIp}) at += (st & bit) ? 8 : 0;
  out->tid_at = at + 4;  // u32 pid, u32 tid
  at += 8;
  out->time_at = at;
  at += 8;
  for (uint64_t bit : {kAddr, kId, kStream, kCpu, kPeriod}) at += (st & bit) ? 8 : 0;
  out->raw_at = at + 4;  // u32 size, then the tracepoint record (u16 common_type first)
  return true;
}

// Walks the records of [begin, end) of the data section (begin on a record), read with pread in
// 1 MB pieces: every sample's time, tid and tracepoint type go to the Walker.
void WalkPerfPart(int fd, const PerfLayout& l, uint64_t begin, uint64_t end, Walker* w) {
  std::vector<uint8_t> buf(kChunk);
  const size_t need = l.raw_at + 2;
  for (uint64_t at = begin; at < end;) {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(kChunk, end - at));
    ssize_t n = ::pread(fd, buf.data(), want, static_cast<off_t>(l.data_offset + at));
    if (n <= 0) return;
    size_t pos = 0;
    while (pos + 8 <= static_cast<size_t>(n)) {
      const uint8_t* r = buf.data() + pos;
      const uint32_t type = LoadLe32(r);
      const uint16_t size = LoadLe16(r + 6);
      if (size < 8) return;  // damaged: this floor stops
      if (pos + size > static_cast<size_t>(n)) break;
      if (type == 9 && size >= 8 + need) {  // PERF_RECORD_SAMPLE
        const uint8_t* body = r + 8;
        w->On(LoadLe64(body + l.time_at), LoadLe32(body + l.tid_at), LoadLe16(body + l.raw_at));
      }
      pos += size;
    }
    if (pos == 0) return;  // a record longer than the buffer
    at += pos;
  }
}

// The data section cut into `parts` pieces at record boundaries (a walk over the headers).
std::vector<uint64_t> PerfCuts(const std::vector<uint8_t>& file, const PerfLayout& l, unsigned parts) {
  std::vector<uint64_t> cuts{0};
  const uint8_t* data = file.data() + l.data_offset;
  const uint64_t step = l.data_size / parts + 1;
  for (uint64_t pos = 0; pos + 8 <= l.data_size;) {
    const uint16_t size = LoadLe16(data + pos + 6);
    if (size < 8) break;
    if (pos >= cuts.back() + step) cuts.push_back(pos);
    pos += size;
  }
  cuts.push_back(l.data_size);
  return cuts;
}

// ---- trace.dat (v6, uncompressed): where each CPU's ring-buffer pages are ----

struct CpuData {
  uint64_t offset, size;
};

// The flyrecord section of a version 6 trace.dat: false (with a message) otherwise.
bool TraceDatCpus(const std::vector<uint8_t>& f, uint32_t* page_size, std::vector<CpuData>* cpus) {
  size_t at = 10;  // "\x17\x08\x44tracing"
  auto fail = [](const char* what) {
    std::fprintf(stderr, "bench_floor: not a version 6 trace.dat (%s)\n", what);
    return false;
  };
  auto room = [&](size_t n) { return at <= f.size() && n <= f.size() - at; };
  // Past a u64 / u32 size field and the bytes it counts; false when they run past the file.
  auto skip64 = [&] {
    if (!room(8) || LoadLe64(f.data() + at) > f.size() - at - 8) return false;
    at += 8 + LoadLe64(f.data() + at);
    return true;
  };
  auto skip32 = [&] {
    if (!room(4) || LoadLe32(f.data() + at) > f.size() - at - 4) return false;
    at += 4 + LoadLe32(f.data() + at);
    return true;
  };
  if (!room(0) || f.size() < 10 || std::memcmp(f.data() + 3, "tracing", 7) != 0) return fail("magic");
  const size_t version_end = static_cast<size_t>(std::find(f.begin() + 10, f.end(), 0) - f.begin());
  if (version_end >= f.size() || std::string(f.begin() + 10, f.begin() + version_end) != "6") return fail("version");
  at = version_end + 1 + 2;  // endian, long size
  if (!room(4)) return fail("page size");
  *page_size = LoadLe32(f.data() + at);
  at += 4;
  if (*page_size < 4096 || *page_size > 65536 || (*page_size & (*page_size - 1))) return fail("page size");
  for (size_t name : {12, 13}) {  // "header_page\0", "header_event\0", each u64 size + data
    if (!room(name)) return fail("headers");
    at += name;
    if (!skip64()) return fail("headers");
  }
  if (!room(4)) return fail("ftrace formats");
  uint32_t count = LoadLe32(f.data() + at);
  at += 4;
  for (uint32_t i = 0; i < count; ++i) {
    if (!skip64()) return fail("ftrace formats");
  }
  if (!room(4)) return fail("event systems");
  const uint32_t systems = LoadLe32(f.data() + at);
  at += 4;
  for (uint32_t s = 0; s < systems && room(1); ++s) {
    at = static_cast<size_t>(std::find(f.begin() + static_cast<ptrdiff_t>(at), f.end(), 0) - f.begin()) + 1;
    if (!room(4)) return fail("event system");
    count = LoadLe32(f.data() + at);
    at += 4;
    for (uint32_t i = 0; i < count; ++i) {
      if (!skip64()) return fail("event format");
    }
  }
  for (int i = 0; i < 2; ++i) {  // kallsyms, printk: u32 size + data
    if (!skip32()) return fail("kallsyms/printk");
  }
  if (!skip64()) return fail("cmdlines");
  if (!room(4)) return fail("cpus");
  const uint32_t ncpus = LoadLe32(f.data() + at);
  at += 4;
  while (room(10) && std::memcmp(f.data() + at, "options  ", 10) == 0) {
    at += 10;
    while (room(6)) {  // u16 id, u32 size, data; id 0 ends them
      const uint16_t id = LoadLe16(f.data() + at);
      at += 2;
      if (id == 0) break;
      if (!skip32()) return fail("options");
    }
  }
  if (!room(10 + 16 * size_t{ncpus}) || std::memcmp(f.data() + at, "flyrecord", 10) != 0) return fail("flyrecord");
  at += 10;
  for (uint32_t c = 0; c < ncpus; ++c, at += 16)
    cpus->push_back({LoadLe64(f.data() + at), LoadLe64(f.data() + at + 8)});
  return true;
}

// Every event of one ring-buffer page (64-bit: u64 time stamp, u64 commit, then events): its time
// (the page's plus the deltas), common_pid and common_type go to the Walker (or `merge`'s collector).
template <typename Sink>
void WalkPage(const uint8_t* page, uint32_t page_size, Sink* w) {
  uint64_t ts = LoadLe64(page);
  const uint64_t commit = LoadLe64(page + 8) & 0xfffff;  // the high bits are flags
  const size_t end = static_cast<size_t>(std::min<uint64_t>(16 + commit, page_size));
  for (size_t at = 16; at + 4 <= end;) {
    const uint32_t h = LoadLe32(page + at);
    const uint32_t type_len = h & 31, delta = h >> 5;
    at += 4;
    if (type_len == 29) {  // padding: the rest of the page, or array[0] bytes
      if (delta == 0 || at + 4 > end) break;
      at += LoadLe32(page + at);
      continue;
    }
    if (type_len == 30 || type_len == 31) {  // time extend / absolute time stamp
      if (at + 4 > end) break;
      const uint64_t t = delta + (uint64_t{LoadLe32(page + at)} << 27);
      ts = type_len == 30 ? ts + t : t;
      at += 4;
      continue;
    }
    ts += delta;
    size_t data = at, next;
    if (type_len == 0) {  // array[0] holds the length (itself included)
      if (at + 4 > end) break;
      next = at + LoadLe32(page + at);
      data = at + 4;
    } else {
      next = at + type_len * 4;
    }
    if (data + 8 > end || next <= at) break;
    w->On(ts, LoadLe32(page + data + 4), LoadLe16(page + data));  // common_type u16, flags, preempt, pid i32
    at = next;
  }
}

// `raw` cut in `chunk`-byte pieces, each compressed on its own (zstd level 3, zlib level 6) into
// *packed, its length before into *lengths.
void Pack(const std::vector<uint8_t>& raw, size_t chunk, bool zstd, std::vector<std::vector<uint8_t>>* packed,
          std::vector<size_t>* lengths) {
  for (size_t at = 0; at < raw.size(); at += chunk) {
    const size_t n = std::min(chunk, raw.size() - at);
    lengths->push_back(n);
    std::vector<uint8_t> out;
    if (zstd) {
      out.resize(ZSTD_compressBound(n));
      out.resize(ZSTD_compress(out.data(), out.size(), raw.data() + at, n, 3));
    } else {
      uLongf len = compressBound(static_cast<uLong>(n));
      out.resize(len);
      compress2(out.data(), &len, raw.data() + at, static_cast<uLong>(n), 6);
      out.resize(len);
    }
    packed->push_back(std::move(out));
  }
}

// A thread's decompressor: zstd's context, or libdeflate's for zlib.
struct Inflater {
  explicit Inflater(bool zstd)
      : dctx(zstd ? ZSTD_createDCtx() : nullptr), deflate(zstd ? nullptr : libdeflate_alloc_decompressor()) {}
  ~Inflater() {
    if (dctx) ZSTD_freeDCtx(dctx);
    if (deflate) libdeflate_free_decompressor(deflate);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;
  ZSTD_DCtx* dctx;
  libdeflate_decompressor* deflate;
};

// One chunk of Pack's into `out`.
void Decompress(Inflater& in, const std::vector<uint8_t>& packed, size_t length, std::vector<uint8_t>* out) {
  if (in.dctx) {
    ZSTD_decompressDCtx(in.dctx, out->data(), length, packed.data(), packed.size());
  } else {
    libdeflate_zlib_decompress(in.deflate, packed.data(), packed.size(), out->data(), length, nullptr);
  }
}

// One timed run: `packed` (Pack's chunks of `chunk` bytes) decompressed on `threads` threads, each
// taking the next chunk; `seen(thread, chunk index, its bytes)` after each. Returns the wall time.
template <typename Seen>
double DecompressOnThreads(const std::vector<std::vector<uint8_t>>& packed, const std::vector<size_t>& lengths,
                           size_t chunk, bool zstd, unsigned threads, double best_wall, Seen seen) {
  std::atomic<size_t> next{0};
  return OnThreads(
      threads,
      [&](unsigned i) {
        std::vector<uint8_t> out(chunk);
        Inflater inflater(zstd);
        for (size_t c; (c = next++) < packed.size();) {
          Decompress(inflater, packed[c], lengths[c], &out);
          seen(i, c, out);
        }
      },
      best_wall);
}

// `walk`: the best of `runs` walks of a perf.data on `threads` threads (0 when it is not walked);
// *walked = the events seen.
double TimeWalkPerf(int fd, size_t size, unsigned threads, int runs, uint64_t* walked) {
  const std::vector<uint8_t> file = ReadWhole(fd, size);
  PerfLayout layout;
  if (!PerfLayoutOf(file, &layout)) return 0;
  const std::vector<uint64_t> cuts = PerfCuts(file, layout, threads);
  const unsigned parts = static_cast<unsigned>(cuts.size() - 1);
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    std::vector<Walker> walkers(parts);
    best = std::min(best, OnThreads(
                              parts,
                              [&](unsigned i) {
                                WalkPerfPart(fd, layout, cuts[i], cuts[i + 1], &walkers[i]);
                                sink += walkers[i].Checksum();
                              },
                              best));
    *walked = 0;
    for (const Walker& w : walkers) *walked += w.events;
  }
  return best;
}

// `zstd-walk` / `zlib-walk`: the same for a version 6 trace.dat packed in `chunk`-byte pieces.
double TimeWalkTrace(int fd, size_t size, bool zstd, size_t chunk, unsigned threads, int runs, uint64_t* walked) {
  const std::vector<uint8_t> file = ReadWhole(fd, size);
  uint32_t page_size = 0;
  std::vector<CpuData> cpus;
  if (!TraceDatCpus(file, &page_size, &cpus)) return 0;
  // Each chunk's pages (offsets inside it) that lie whole inside a CPU's data.
  std::vector<std::vector<uint32_t>> pages((size + chunk - 1) / chunk);
  for (const CpuData& c : cpus) {
    if (c.offset > size || c.size > size - c.offset) continue;  // not this file's bytes
    for (uint64_t p = c.offset; p + page_size <= c.offset + c.size; p += page_size) {
      if (p / chunk == (p + page_size - 1) / chunk) pages[p / chunk].push_back(static_cast<uint32_t>(p % chunk));
    }
  }
  std::vector<std::vector<uint8_t>> packed;
  std::vector<size_t> lengths;
  Pack(file, chunk, zstd, &packed, &lengths);
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    std::vector<Walker> walkers(threads);
    best = std::min(best, DecompressOnThreads(packed, lengths, chunk, zstd, threads, best,
                                              [&](unsigned i, size_t c, const std::vector<uint8_t>& out) {
                                                for (uint32_t p : pages[c])
                                                  WalkPage(out.data() + p, page_size, &walkers[i]);
                                              }));
    *walked = 0;
    for (const Walker& w : walkers) *walked += w.events, sink += w.Checksum();
  }
  return best;
}

// `merge`: the step a correct exit pairing needs beyond the walk. A vCPU thread moves between CPUs
// (a halted one wakes up elsewhere), so its kvm_exit and kvm_entry can lie in two CPUs' streams:
// every reader merges the streams into one time order before pairing. Here each CPU's events of a
// version 6 trace.dat are walked first (untimed) into arrays of (time, thread, type); the timed part
// merges them on one thread (the earliest head of the streams, found by a linear scan: the fewest
// instructions for the few CPUs of a trace) and hands each event to the Walker.
struct MergeEvent {
  uint64_t ts;
  uint32_t tid;
  uint16_t type;
};
struct Collector {
  std::vector<MergeEvent>* out;
  void On(uint64_t ts, uint32_t tid, uint16_t type) { out->push_back({ts, tid, type}); }
};

double TimeMerge(int fd, size_t size, int runs, uint64_t* walked) {
  const std::vector<uint8_t> file = ReadWhole(fd, size);
  uint32_t page_size = 0;
  std::vector<CpuData> cpus;
  if (!TraceDatCpus(file, &page_size, &cpus)) return 0;
  std::vector<std::vector<MergeEvent>> streams;
  for (const CpuData& c : cpus) {
    if (c.offset > size || c.size > size - c.offset) continue;
    Collector col{&streams.emplace_back()};
    for (uint64_t p = c.offset; p + page_size <= c.offset + c.size; p += page_size)
      WalkPage(file.data() + p, page_size, &col);
  }
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    Walker w;
    best = std::min(best, OnThreads(
                              1,
                              [&](unsigned) {
                                std::vector<const MergeEvent*> at, end;
                                for (const auto& s : streams) {
                                  if (s.empty()) continue;
                                  at.push_back(s.data());
                                  end.push_back(s.data() + s.size());
                                }
                                while (!at.empty()) {
                                  size_t k = 0;
                                  for (size_t i = 1; i < at.size(); ++i) k = at[i]->ts < at[k]->ts ? i : k;
                                  w.On(at[k]->ts, at[k]->tid, at[k]->type);
                                  if (++at[k] == end[k]) {
                                    at.erase(at.begin() + static_cast<ptrdiff_t>(k));
                                    end.erase(end.begin() + static_cast<ptrdiff_t>(k));
                                  }
                                }
                                sink += w.Checksum();
                              },
                              best));
    *walked = w.events;
  }
  return best;
}

// `merge` on a perf.data: its samples in file order are a few ascending runs per round (perf copies
// each CPU's buffer in turn), so every reader sorts each round and merges it with what the round
// before left (perf's ordered events: what is not later than the newest time read before the
// previous round's end may go). The records are walked first (untimed) into (time, thread, type);
// the timed part sorts each round (runs merged pairwise, as exitscope's reader does), merges it
// into what is pending and hands each event that may go to the Walker, on one thread. A reader can
// sort rounds on other cores; the merge it cannot.
struct RoundEvent {
  uint64_t ts;
  uint32_t seq;  // file order: the tie-break that makes the order total
  uint32_t tid;
  uint16_t type;
};

double TimeMergePerf(const std::vector<uint8_t>& file, int runs, uint64_t* walked) {
  PerfLayout l;
  if (!PerfLayoutOf(file, &l)) return 0;
  std::vector<RoundEvent> events;
  std::vector<size_t> round_ends;  // into events
  const uint8_t* data = file.data() + l.data_offset;
  const size_t need = l.raw_at + 2;
  for (uint64_t pos = 0; pos + 8 <= l.data_size;) {
    const uint32_t type = LoadLe32(data + pos);
    const uint16_t size = LoadLe16(data + pos + 6);
    if (size < 8 || pos + size > l.data_size) break;
    const uint8_t* body = data + pos + 8;
    if (type == 9 && size >= 8 + need) {  // PERF_RECORD_SAMPLE
      events.push_back({LoadLe64(body + l.time_at), static_cast<uint32_t>(events.size()), LoadLe32(body + l.tid_at),
                        LoadLe16(body + l.raw_at)});
    } else if (type == 68) {  // PERF_RECORD_FINISHED_ROUND (a perf tool record type)
      round_ends.push_back(events.size());
    }
    pos += size;
  }
  round_ends.push_back(events.size());
  const auto by_time = [](const RoundEvent& a, const RoundEvent& b) {
    return a.ts != b.ts ? a.ts < b.ts : a.seq < b.seq;
  };
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    std::vector<RoundEvent> work = events;  // sorted in place: a fresh copy each run (untimed)
    Walker w;
    best = std::min(best, OnThreads(
                              1,
                              [&](unsigned) {
                                std::vector<RoundEvent> scratch, pending, merged;
                                uint64_t newest = 0, limit = 0;
                                size_t from = 0;
                                for (size_t end : round_ends) {
                                  RoundEvent* first = work.data() + from;
                                  RoundEvent* last = work.data() + end;
                                  exitscope::SortAscendingRuns(first, last, by_time, &scratch);
                                  merged.clear();
                                  std::merge(pending.begin(), pending.end(), first, last, std::back_inserter(merged),
                                             by_time);
                                  size_t go = 0;
                                  while (go < merged.size() && merged[go].ts <= limit) {
                                    w.On(merged[go].ts, merged[go].tid, merged[go].type);
                                    ++go;
                                  }
                                  pending.assign(merged.begin() + static_cast<ptrdiff_t>(go), merged.end());
                                  for (const RoundEvent* e = first; e != last; ++e) newest = std::max(newest, e->ts);
                                  limit = newest;
                                  from = end;
                                }
                                for (const RoundEvent& e : pending) w.On(e.ts, e.tid, e.type);
                                sink += w.Checksum();
                              },
                              best));
    *walked = w.events;
  }
  return best;
}

// Decompresses `packed` (zstd frames of `lengths` bytes) on one thread pinned to `cpu`, best of
// `runs`; 0 when the thread cannot run there.
double DecompressOnCore(int cpu, const std::vector<std::vector<uint8_t>>& packed, const std::vector<size_t>& lengths,
                        int runs) {
  double best = 0;
  std::thread t([&] {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (::pthread_setaffinity_np(::pthread_self(), sizeof set, &set) != 0) return;
    std::vector<uint8_t> out(kChunk);
    ZSTD_DCtx* dctx = ZSTD_createDCtx();
    for (int r = 0; r < runs; ++r) {
      auto t0 = std::chrono::steady_clock::now();
      for (size_t c = 0; c < packed.size(); ++c) {
        ZSTD_decompressDCtx(dctx, out.data(), lengths[c], packed[c].data(), packed[c].size());
        sink += out[0];
      }
      const double s = Seconds(t0);
      if (best == 0 || s < best) best = s;
    }
    ZSTD_freeDCtx(dctx);
  });
  t.join();
  return best;
}

// Two threads hand one cache line back and forth; the mean round trip in ns (0 on one core).
double LineRoundTripNs() {
  if (std::thread::hardware_concurrency() < 2) return 0;  // the two would spin on one core
  constexpr int kTrips = 100000;
  alignas(64) std::atomic<int> line{0};
  auto t0 = std::chrono::steady_clock::now();
  std::thread other([&] {
    for (int i = 0; i < kTrips; ++i) {
      while (line.load(std::memory_order_acquire) != 2 * i + 1) {
      }
      line.store(2 * i + 2, std::memory_order_release);
    }
  });
  for (int i = 0; i < kTrips; ++i) {
    line.store(2 * i + 1, std::memory_order_release);
    while (line.load(std::memory_order_acquire) != 2 * i + 2) {
    }
  }
  other.join();
  return Seconds(t0) * 1e9 / kTrips;
}

// Out: "cores: cpu0 S s, cpu1 S s, ... (slowest N.NNx the fastest), line round trip N ns".
int Cores(int fd, size_t size, int runs) {
  std::vector<std::vector<uint8_t>> packed;
  std::vector<size_t> lengths;
  Pack(ReadWhole(fd, std::min<size_t>(size, 32 << 20)), kChunk, true, &packed, &lengths);
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  ::sched_getaffinity(0, sizeof allowed, &allowed);
  double lo = 0, hi = 0;
  std::printf("cores:");
  const char* sep = " ";
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &allowed)) continue;
    const double s = DecompressOnCore(cpu, packed, lengths, runs);
    if (s == 0) continue;
    std::printf("%scpu%d %.3f s", sep, cpu, s);
    sep = ", ";
    lo = lo == 0 ? s : std::min(lo, s);
    hi = std::max(hi, s);
  }
  std::printf(" (slowest %.2fx the fastest)", lo > 0 ? hi / lo : 0.0);
  if (double rt = LineRoundTripNs(); rt > 0) std::printf(", line round trip %.0f ns", rt);
  std::printf("\n");
  return 0;
}

int main(int argc, char** argv) {
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  int runs = 3;
  size_t chunk = kChunk;
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-j" && i + 1 < argc) {
      threads = static_cast<unsigned>(std::max(1, std::atoi(argv[++i])));
    } else if (a == "--runs" && i + 1 < argc) {
      runs = std::max(1, std::atoi(argv[++i]));
    } else if (a == "--chunk" && i + 1 < argc) {
      chunk = static_cast<size_t>(std::max(4096L, std::atol(argv[++i])));
    } else {
      args.push_back(a);
    }
  }
  if (args.size() != 2) {
    std::fprintf(stderr,
                 "usage: bench_floor [-j N] [--runs N] [--chunk BYTES] "
                 "touch|read|zstd|zlib|walk|zstd-walk|zlib-walk|merge|cores FILE\n");
    return 64;
  }
  const std::string mode = args[0], path = args[1];
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || st.st_size == 0) {
    std::fprintf(stderr, "bench_floor: cannot read '%s'\n", path.c_str());
    return 66;
  }
  const size_t size = static_cast<size_t>(st.st_size);
  const size_t part = (size + threads - 1) / threads;
  double best = 1e30;
  uint64_t walked = 0;  // events seen by the walk modes

  if (mode == "touch") {
    for (int r = 0; r < runs; ++r) {
      // A fresh mapping each run: the page faults are part of what a reader of the mapping pays.
      void* m = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
      if (m == MAP_FAILED) {
        std::perror("mmap");
        return 74;
      }
      const uint8_t* p = static_cast<const uint8_t*>(m);
      best = std::min(best, OnThreads(
                                threads,
                                [&](unsigned i) {
                                  size_t b = std::min(size, i * part), e = std::min(size, b + part);
                                  sink += Sum(p + b, e - b);
                                },
                                best));
      ::munmap(m, size);
    }
  } else if (mode == "read") {
    for (int r = 0; r < runs; ++r) {
      best = std::min(best, OnThreads(
                                threads,
                                [&](unsigned i) {
                                  std::vector<uint8_t> buf(kChunk);
                                  size_t b = std::min(size, i * part), e = std::min(size, b + part);
                                  uint64_t s = 0;
                                  for (size_t at = b; at < e;) {
                                    ssize_t n =
                                        ::pread(fd, buf.data(), std::min(kChunk, e - at), static_cast<off_t>(at));
                                    if (n <= 0) break;
                                    s += Sum(buf.data(), static_cast<size_t>(n));
                                    at += static_cast<size_t>(n);
                                  }
                                  sink += s;
                                },
                                best));
    }
  } else if (mode == "zstd" || mode == "zlib") {
    const bool zstd = mode == "zstd";
    std::vector<std::vector<uint8_t>> packed;
    std::vector<size_t> lengths;
    Pack(ReadWhole(fd, size), chunk, zstd, &packed, &lengths);
    for (int r = 0; r < runs; ++r) {
      best = std::min(best,
                      DecompressOnThreads(packed, lengths, chunk, zstd, threads, best,
                                          [](unsigned, size_t, const std::vector<uint8_t>& out) { sink += out[0]; }));
    }
  } else if (mode == "walk") {
    best = TimeWalkPerf(fd, size, threads, runs, &walked);
  } else if (mode == "zstd-walk" || mode == "zlib-walk") {
    best = TimeWalkTrace(fd, size, mode == "zstd-walk", chunk, threads, runs, &walked);
  } else if (mode == "merge") {
    // A perf.data (its magic) or a version 6 trace.dat.
    char magic[8] = {};
    const bool perf = ::pread(fd, magic, 8, 0) == 8 && std::memcmp(magic, "PERFILE2", 8) == 0;
    best = perf ? TimeMergePerf(ReadWhole(fd, size), runs, &walked) : TimeMerge(fd, size, runs, &walked);
    threads = 1;
  } else if (mode == "cores") {
    return Cores(fd, size, runs);
  } else {
    std::fprintf(stderr,
                 "bench_floor: unknown mode '%s' (touch, read, zstd, zlib, walk, zstd-walk, zlib-walk, merge, cores)\n",
                 mode.c_str());
    return 64;
  }
  ::close(fd);
  if (best == 0) return 65;  // not walked: the reason is printed
  std::printf("floor %s %s: %zu bytes, %u threads, %.3f s (%.1f GB/s), cpu %.3f s", mode.c_str(), path.c_str(), size,
              threads, best, static_cast<double>(size) / best / 1e9, best_cpu);
  if (walked) std::printf(", %llu events walked", static_cast<unsigned long long>(walked));
  std::printf("\n");
  return 0;
}
