#include "sources/live/trace_pipe_reader.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

namespace exitscope {
namespace {

// kernel/trace/ring_buffer.c: flags in the high bits of a read page's commit field.
constexpr uint64_t kRbMissedEvents = 1ull << 31;      // RB_MISSED_EVENTS
constexpr uint64_t kRbMissedStored = 1ull << 30;      // RB_MISSED_STORED: count stored after the data
constexpr uint64_t kRbCommitMask = (1ull << 27) - 1;  // length bits (trace-cmd's COMMIT_MASK)

uint64_t LoadLong(const uint8_t* p, uint32_t long_size) {
  uint64_t v = 0;
  std::memcpy(&v, p, long_size);
  return v;
}

}  // namespace

RingPageHeader ParseRingPageHeader(std::span<const uint8_t> page, uint32_t long_size) {
  RingPageHeader h;
  const uint32_t data_off = RingPageDataOffset(long_size);
  if (page.size() < data_off) return h;
  std::memcpy(&h.ts, page.data(), 8);
  uint64_t commit = LoadLong(page.data() + 8, long_size);
  h.data_bytes = static_cast<uint32_t>(std::min<uint64_t>(commit & kRbCommitMask, page.size() - data_off));
  h.missed = commit & kRbMissedEvents;
  if (h.missed && (commit & kRbMissedStored) && data_off + h.data_bytes + long_size <= page.size()) {
    h.missed_count = LoadLong(page.data() + data_off + h.data_bytes, long_size);
  }
  return h;
}

void ParseCpuStats(const std::string& text, CpuLoss* loss) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string key = line.substr(0, colon);
    uint64_t v = std::strtoull(line.c_str() + colon + 1, nullptr, 10);
    if (key == "overrun")
      loss->overrun = v;
    else if (key == "dropped events")
      loss->dropped = v;
    else if (key == "commit overrun")  // kernel/trace/trace.c tracing_stats_read
      loss->commit_overrun = v;
    else if (key == "entries")
      loss->entries = v;
  }
}

TracePipeReader::~TracePipeReader() {
  for (int fd : fds_) {
    if (fd >= 0) ::close(fd);
  }
}

Result<std::unique_ptr<TracePipeReader>> TracePipeReader::Open(const TracefsInstance& instance) {
  std::unique_ptr<TracePipeReader> r(new TracePipeReader());
  r->instance_ = &instance;
  r->page_size_ = instance.page_size();
  r->page_.resize(r->page_size_);
  for (int cpu = 0; cpu < instance.cpu_count(); ++cpu) {
    std::string path = instance.dir() + "/per_cpu/cpu" + std::to_string(cpu) + "/trace_pipe_raw";
    int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    // Offline CPUs have no buffer to read: keep the slot, skip it.
    r->fds_.push_back(fd);
  }
  r->loss_.resize(r->fds_.size());
  r->stats_text_.resize(r->fds_.size());
  bool any = false;
  for (int fd : r->fds_) any |= fd >= 0;
  if (!any) {
    return MakeError(errno == EACCES || errno == EPERM ? kExitNoPerm : kExitIoErr, "live.no-ring-buffer",
                     "cannot open any trace_pipe_raw in " + instance.dir() + ": " + std::strerror(errno),
                     "run as root");
  }
  return r;
}

Result<uint64_t> TracePipeReader::ReadReady(const Sink& sink, const std::vector<bool>* only) {
  uint64_t pages = 0;
  for (size_t cpu = 0; cpu < fds_.size(); ++cpu) {
    if (fds_[cpu] < 0 || (only && !(*only)[cpu])) continue;
    for (;;) {
      ssize_t n = ::read(fds_[cpu], page_.data(), page_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno == EAGAIN) break;
      if (n < 0) {
        return MakeError(kExitIoErr, "live.read",
                         "reading the ring buffer of cpu " + std::to_string(cpu) + ": " + std::strerror(errno));
      }
      if (n == 0) break;
      if (static_cast<size_t>(n) < page_.size()) {
        std::memset(page_.data() + n, 0, page_.size() - static_cast<size_t>(n));
      }
      RingPageHeader h = ParseRingPageHeader(page_);
      if (h.data_bytes == 0 && !h.missed) continue;  // an empty page carries nothing
      CpuLoss& l = loss_[cpu];
      ++l.pages;
      if (h.missed) {
        ++l.pages_with_missed;
        l.missed_events += h.missed_count;
      }
      if (Status s = sink(static_cast<int>(cpu), page_); !s) return s.error();
      ++pages;
    }
  }
  return pages;
}

Result<uint64_t> TracePipeReader::Poll(int timeout_ms, const Sink& sink) {
  std::vector<pollfd> pfds;
  for (int fd : fds_) {
    if (fd >= 0) pfds.push_back({fd, POLLIN, 0});
  }
  int r = ::poll(pfds.data(), pfds.size(), timeout_ms);
  if (r < 0 && errno != EINTR) {
    return MakeError(kExitIoErr, "live.poll", std::string("poll on the ring buffer: ") + std::strerror(errno));
  }
  // Only CPUs the kernel marked ready (buffer_percent full): reading a busy CPU's half page each
  // time would store mostly-empty pages. Partial pages go out at Drain (the end, or top's tick).
  std::vector<bool> ready(fds_.size(), false);
  size_t k = 0;
  for (size_t cpu = 0; cpu < fds_.size(); ++cpu) {
    if (fds_[cpu] >= 0) ready[cpu] = r > 0 && (pfds[k++].revents & POLLIN);
  }
  return ReadReady(sink, &ready);
}

void TracePipeReader::UpdateStats() {
  for (size_t cpu = 0; cpu < fds_.size(); ++cpu) {
    auto text = instance_->Read("per_cpu/cpu" + std::to_string(cpu) + "/stats");
    if (!text.ok()) continue;
    stats_text_[cpu] = *text;
    ParseCpuStats(*text, &loss_[cpu]);
  }
}

}  // namespace exitscope
