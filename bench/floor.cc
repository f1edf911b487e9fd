// bench_floor: what this machine allows for a file, on all cores — the floor every exitscope figure
// is stated as a multiple of (bench/compare_peers.sh runs it beside the peers).
//   bench_floor touch FILE   map FILE and read every byte (threads sum contiguous parts): the cost of
//                            merely looking at a perf.data / uncompressed trace.dat from the page cache
//   bench_floor read FILE    the same through pread(2) into a 1 MB buffer per thread (no mapping)
//   bench_floor zstd FILE    FILE cut in 1 MB chunks, each compressed (level 3, untimed), then every
//   bench_floor zlib FILE    chunk decompressed (zlib: level 6): what a compressed trace.dat costs
//   bench_floor cores FILE   the first 32 MB of FILE decompressed (zstd, 1 MB chunks) on each core in
//                            turn, pinned: how fast each core is now. On this VM one vCPU is at times
//                            ~1.4x slower than the other for minutes (a busy sibling thread, a lower
//                            clock), and every figure with it; also the round trip of one cache line
//                            between two threads.
// Options: -j N threads (default: one per core), --runs N (best of, default 3), --chunk BYTES (zstd,
// zlib: 1 MB by default; trace-cmd compresses 10 pages a chunk, 40960 bytes of 4 KB pages. Each
// chunk is a frame of its own: on the ×27 trace zlib took 0.33 s in 40 KB chunks against 0.25 s in
// 1 MB ones, zstd 0.098 s against 0.096 s).
// Out: one line "floor MODE FILE: BYTES bytes, N threads, S s (G GB/s), cpu C s" (the best run's wall
// and its CPU time, user + system of all threads).
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

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

}  // namespace

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
    std::fprintf(stderr, "usage: bench_floor [-j N] [--runs N] [--chunk BYTES] touch|read|zstd|zlib|cores FILE\n");
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
      std::atomic<size_t> next{0};
      best = std::min(best,
                      OnThreads(
                          threads,
                          [&](unsigned) {
                            std::vector<uint8_t> out(chunk);
                            ZSTD_DCtx* dctx = zstd ? ZSTD_createDCtx() : nullptr;
                            for (size_t c; (c = next++) < packed.size();) {
                              if (zstd) {
                                ZSTD_decompressDCtx(dctx, out.data(), lengths[c], packed[c].data(), packed[c].size());
                              } else {
                                uLongf len = static_cast<uLongf>(lengths[c]);
                                uncompress(out.data(), &len, packed[c].data(), static_cast<uLong>(packed[c].size()));
                              }
                              sink += out[0];
                            }
                            if (dctx) ZSTD_freeDCtx(dctx);
                          },
                          best));
    }
  } else if (mode == "cores") {
    return Cores(fd, size, runs);
  } else {
    std::fprintf(stderr, "bench_floor: unknown mode '%s' (touch, read, zstd, zlib, cores)\n", mode.c_str());
    return 64;
  }
  ::close(fd);
  std::printf("floor %s %s: %zu bytes, %u threads, %.3f s (%.1f GB/s), cpu %.3f s\n", mode.c_str(), path.c_str(), size,
              threads, best, static_cast<double>(size) / best / 1e9, best_cpu);
  return 0;
}
