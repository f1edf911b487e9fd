#include "observe/kvm_stats_fd.h"

#include <linux/kvm.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <tuple>
#include <algorithm>

namespace exitscope {
namespace {
namespace fs = std::filesystem;

// Bounds on what a stats file may claim before we allocate for it (Linux 6.x has ~60 vCPU stats
// with names under 64 bytes; these leave room for many kernels to come).
constexpr uint32_t kMaxStats = 4096;
constexpr uint32_t kMaxNameSize = 4096;
// struct kvm_stats_desc's fixed part as C lays it out (linux/kvm.h): the name follows at byte 16. Not
// sizeof(): the uapi header's flexible-array wrapper is an empty struct, which C++ gives a byte.
constexpr size_t kDescFixedSize = 16;
static_assert(offsetof(kvm_stats_desc, bucket_size) + sizeof(__u32) == kDescFixedSize);
static_assert(sizeof(kvm_stats_header) == 24);

Error Bad(const std::string& what) {
  return MakeError(kExitDataErr, "observe.bad-kvm-stats", "KVM stats file: " + what,
                   "a stats layout this build cannot read; that VM's debugfs counters are read instead");
}

bool ReadAt(int fd, uint64_t off, void* buf, size_t len) {
  auto* p = static_cast<uint8_t*>(buf);
  while (len > 0) {
    ssize_t n = ::pread(fd, p, len, static_cast<off_t>(off));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    off += static_cast<uint64_t>(n);
    len -= static_cast<size_t>(n);
  }
  return true;
}

uint32_t U32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

constexpr const char* kTagGone = "observe.kvm-stats-fd-gone";

Error Unreachable(const std::string& why) {
  return MakeError(kExitUnavailable, "observe.kvm-stats-fd-unreachable", why,
                   "run as root on Linux >= 5.14; a VMM that keeps its stats fds open (exitscope bench does) is read "
                   "through them, any other from debugfs");
}

// A file descriptor we own, closed on scope exit.
struct Fd {
  int fd = -1;
  explicit Fd(int f) : fd(f) {}
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
};

// One of the VMM's stats fds, duplicated into this process, read and closed again.
Result<KvmStatsFile> StatsOfTargetFd(int pidfd, int target_fd) {
  Fd dup(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, target_fd, 0)));
  if (dup.fd < 0 && (errno == EBADF || errno == ESRCH)) {
    // Closed (or the VMM gone) since /proc listed it: the VM is being torn down.
    return MakeError(kExitNoInput, kTagGone, "the VMM closed its stats fd while it was read");
  }
  if (dup.fd < 0) return Unreachable(std::string("pidfd_getfd: ") + std::strerror(errno));
  return ReadKvmStatsFile(dup.fd);
}

void AddInto(std::map<std::string, uint64_t>* sum, const std::map<std::string, uint64_t>& add) {
  for (const auto& [k, v] : add) (*sum)[k] += v;
}

}  // namespace

Result<KvmStatsFile> ReadKvmStatsFile(int fd) {
  uint8_t h[sizeof(kvm_stats_header)];
  if (!ReadAt(fd, 0, h, sizeof(h))) return Bad("short header");
  const uint32_t name_size = U32(h + offsetof(kvm_stats_header, name_size));
  const uint32_t num_desc = U32(h + offsetof(kvm_stats_header, num_desc));
  const uint32_t id_offset = U32(h + offsetof(kvm_stats_header, id_offset));
  const uint32_t desc_offset = U32(h + offsetof(kvm_stats_header, desc_offset));
  const uint32_t data_offset = U32(h + offsetof(kvm_stats_header, data_offset));
  if (name_size == 0 || name_size > kMaxNameSize) return Bad("name size " + std::to_string(name_size));
  if (num_desc > kMaxStats) return Bad(std::to_string(num_desc) + " stats");
  KvmStatsFile out;
  std::string id(name_size, '\0');
  if (!ReadAt(fd, id_offset, id.data(), name_size)) return Bad("id string out of the file");
  out.id = id.c_str();
  const size_t desc_size = kDescFixedSize + name_size;
  std::vector<uint8_t> descs(desc_size * num_desc);
  if (!descs.empty() && !ReadAt(fd, desc_offset, descs.data(), descs.size())) return Bad("descriptors out of the file");
  out.stats.reserve(num_desc);
  for (uint32_t i = 0; i < num_desc; ++i) {
    const uint8_t* d = descs.data() + i * desc_size;
    KvmStatDesc s;
    s.flags = U32(d + offsetof(kvm_stats_desc, flags));
    std::memcpy(&s.exponent, d + offsetof(kvm_stats_desc, exponent), sizeof(s.exponent));
    uint16_t size = 0;
    std::memcpy(&size, d + offsetof(kvm_stats_desc, size), sizeof(size));
    const uint32_t offset = U32(d + offsetof(kvm_stats_desc, offset));
    const char* name = reinterpret_cast<const char*>(d + kDescFixedSize);
    s.name.assign(name, strnlen(name, name_size));
    s.values.resize(size);
    if (size && !ReadAt(fd, uint64_t{data_offset} + offset, s.values.data(), size * sizeof(uint64_t)))
      return Bad("data of " + s.name + " out of the file");
    out.stats.push_back(std::move(s));
  }
  return out;
}

std::map<std::string, uint64_t> CumulativeCounters(const KvmStatsFile& f) {
  std::map<std::string, uint64_t> out;
  for (const KvmStatDesc& s : f.stats)
    if ((s.flags & KVM_STATS_TYPE_MASK) == KVM_STATS_TYPE_CUMULATIVE && s.values.size() == 1) out[s.name] = s.values[0];
  return out;
}

std::optional<KvmFdKind> ParseKvmFdLink(std::string_view link) {
  // The anon inode names of virt/kvm/kvm_main.c behind anon_inode: in a /proc/<pid>/fd link:
  // "kvm-vm", "kvm-vcpu:%d" (vcpu_id), "kvm-vm-stats", "kvm-vcpu-stats:%d" (vcpu_id).
  constexpr std::string_view kPrefix = "anon_inode:kvm-";
  if (!link.starts_with(kPrefix)) return std::nullopt;
  link.remove_prefix(kPrefix.size());
  if (link == "vm") return KvmFdKind{false, -1};
  if (link == "vm-stats") return KvmFdKind{true, -1};
  KvmFdKind k;
  if (link.starts_with("vcpu:")) {
    link.remove_prefix(5);
  } else if (link.starts_with("vcpu-stats:")) {
    link.remove_prefix(11);
    k.stats = true;
  } else {
    return std::nullopt;
  }
  auto [p, err] = std::from_chars(link.data(), link.data() + link.size(), k.vcpu);
  if (err != std::errc() || p != link.data() + link.size() || k.vcpu < 0) return std::nullopt;
  return k;
}

KvmProcessFds FindKvmFds(const std::string& proc_root, int pid) {
  KvmProcessFds out;
  out.pid = pid;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(proc_root + "/" + std::to_string(pid) + "/fd", ec)) {
    int fd = -1;
    const std::string name = e.path().filename().string();
    if (std::from_chars(name.data(), name.data() + name.size(), fd).ec != std::errc()) continue;
    fs::path target = fs::read_symlink(e.path(), ec);
    if (ec) continue;
    auto kind = ParseKvmFdLink(target.string());
    if (!kind) continue;
    if (kind->vcpu < 0)
      (kind->stats ? out.vm_stats_fds : out.vm_fds).push_back(fd);
    else
      (kind->stats ? out.vcpu_stats_fds : out.vcpu_fds)[kind->vcpu] = fd;
  }
  std::sort(out.vm_fds.begin(), out.vm_fds.end());
  std::sort(out.vm_stats_fds.begin(), out.vm_stats_fds.end());
  return out;
}

Result<KvmVmCounters> ReadVmStatsByFd(const std::string& proc_root, int pid) {
  KvmProcessFds fds = FindKvmFds(proc_root, pid);
  const std::string who = "pid " + std::to_string(pid);
  if (fds.vm_fds.empty()) return Unreachable(who + " holds no kvm-vm fd");
  if (fds.vm_fds.size() > 1) return Unreachable(who + " holds more than one VM");
  for (const auto& [id, fd] : fds.vcpu_fds) {
    if (!fds.vcpu_stats_fds.count(id)) {
      return Unreachable(who + " holds no stats fd for vCPU " + std::to_string(id) +
                         " (KVM gives one only to the VM's own process)");
    }
  }
  if (fds.vcpu_stats_fds.empty()) return Unreachable(who + " holds no vCPU stats fd");
  Fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd.fd < 0) return Unreachable(std::string("pidfd_open: ") + std::strerror(errno));
  KvmVmCounters vm;
  vm.pid = pid;
  vm.vm_fd = fds.vm_fds[0];
  vm.source = "stats-fd";
  if (fds.vm_stats_fds.size() == 1) {
    auto own = StatsOfTargetFd(pidfd.fd, fds.vm_stats_fds[0]);
    if (!own.ok()) return own.error();
    vm.counters = CumulativeCounters(*own);
  }
  for (const auto& [id, fd] : fds.vcpu_stats_fds) {
    auto v = StatsOfTargetFd(pidfd.fd, fd);
    if (!v.ok()) return v.error();
    auto c = CumulativeCounters(*v);
    AddInto(&vm.counters, c);
    vm.vcpus[id] = std::move(c);
  }
  return vm;
}

namespace {

// The pids that hold a VM: from debugfs's "<pid>-<fd>" directories when they are there, else every
// process whose fds include a kvm-vm (the slower walk, for hosts without debugfs).
std::vector<int> VmPids(const std::vector<KvmVmCounters>& debugfs, bool have_debugfs, const std::string& proc_root) {
  std::vector<int> pids;
  if (have_debugfs) {
    for (const auto& vm : debugfs)
      if (pids.empty() || pids.back() != vm.pid) pids.push_back(vm.pid);
    return pids;
  }
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(proc_root, ec)) {
    int pid = 0;
    const std::string name = e.path().filename().string();
    auto [p, err] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (err != std::errc() || p != name.data() + name.size()) continue;
    if (!FindKvmFds(proc_root, pid).vm_fds.empty()) pids.push_back(pid);
  }
  std::sort(pids.begin(), pids.end());
  return pids;
}

}  // namespace

Result<std::vector<KvmVmCounters>> ReadKvmStats(const KvmStatsReadOptions& o, std::string* why_not_fd,
                                                std::map<int, int>* fd_pids) {
  // Reads a VM is left out after its VMM stopped holding stats fds, before debugfs takes over: a
  // VMM tearing its VM down closes them first (exitscope bench does), and a debugfs read in that
  // window would mix sources; one that keeps running without them is read from debugfs after this.
  constexpr int kSkipReads = 3;
  auto debugfs = ReadKvmDebugfs(o.debugfs);
  if (!o.use_fd) return debugfs;
  const bool have_debugfs = debugfs.ok();
  std::vector<KvmVmCounters> from_debugfs = have_debugfs ? std::move(*debugfs) : std::vector<KvmVmCounters>{};
  std::vector<KvmVmCounters> out;
  std::string why;
  const std::vector<int> pids = VmPids(from_debugfs, have_debugfs, o.proc_root);
  if (fd_pids)
    std::erase_if(*fd_pids, [&](const auto& kv) { return !std::binary_search(pids.begin(), pids.end(), kv.first); });
  for (int pid : pids) {
    auto vm = ReadVmStatsByFd(o.proc_root, pid);
    if (vm.ok()) {
      if (fd_pids) (*fd_pids)[pid] = 0;
      out.push_back(std::move(*vm));
      continue;
    }
    // A VM whose stats fds went while they were read is closing: left out of this read rather than
    // read from debugfs, so its per-vCPU and VM figures stay from the one source.
    if (vm.error().tag == kTagGone) continue;
    if (fd_pids) {
      if (auto it = fd_pids->find(pid); it != fd_pids->end() && ++it->second <= kSkipReads) continue;
    }
    if (why.empty()) why = vm.error().message;
    for (const auto& d : from_debugfs)
      if (d.pid == pid) out.push_back(d);
  }
  if (why_not_fd) *why_not_fd = why;
  if (!have_debugfs && out.empty() && !why.empty()) return Unreachable(why + "; and " + debugfs.error().message);
  if (!have_debugfs && out.empty()) {
    // Nothing to read either way: no VM now, but the stats fds are the source (debugfs is absent).
    if (debugfs.error().code == kExitNoPerm && ::geteuid() != 0) return debugfs.error();
  }
  std::sort(out.begin(), out.end(), [](const KvmVmCounters& a, const KvmVmCounters& b) {
    return std::tie(a.pid, a.vm_fd) < std::tie(b.pid, b.vm_fd);
  });
  return out;
}

}  // namespace exitscope
