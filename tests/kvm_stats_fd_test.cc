// KVM's binary stats file (issue 16) parsed from bytes laid out as Documentation/virt/kvm/api.rst
// (KVM_GET_STATS_FD) describes them, and the kvm fds found from /proc/<pid>/fd links.
#include <gtest/gtest.h>
#include <linux/kvm.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "observe/kvm_stats_fd.h"

namespace exitscope {
namespace {
namespace fs = std::filesystem;

// A stats file as the kernel lays it out: header, id string, descriptors (each followed by its
// name padded to name_size), data block; the blocks at offsets the header gives, in a memfd.
struct StatSpec {
  std::string name;
  uint32_t flags;
  int16_t exponent;
  std::vector<uint64_t> values;
};

std::vector<uint8_t> StatsBytes(const std::string& id, const std::vector<StatSpec>& stats, uint32_t name_size = 48) {
  kvm_stats_header h{};
  h.name_size = name_size;
  h.num_desc = static_cast<uint32_t>(stats.size());
  h.id_offset = sizeof(h);
  h.desc_offset = h.id_offset + name_size;
  constexpr size_t kDescFixed = 16;  // the C layout's fixed part; the name follows
  const size_t desc_size = kDescFixed + name_size;
  h.data_offset = static_cast<uint32_t>(h.desc_offset + desc_size * stats.size() + 8);  // a gap: offsets are read
  std::vector<uint8_t> out(h.data_offset);
  std::memcpy(out.data(), &h, sizeof(h));
  std::memcpy(out.data() + h.id_offset, id.c_str(), id.size() + 1);
  uint32_t data = 0;
  for (size_t i = 0; i < stats.size(); ++i) {
    kvm_stats_desc d{};
    d.flags = stats[i].flags;
    d.exponent = stats[i].exponent;
    d.size = static_cast<uint16_t>(stats[i].values.size());
    d.offset = data;
    uint8_t* p = out.data() + h.desc_offset + i * desc_size;
    std::memcpy(p, &d, kDescFixed);
    std::memcpy(p + kDescFixed, stats[i].name.c_str(), stats[i].name.size() + 1);
    out.resize(h.data_offset + data + 8 * stats[i].values.size());
    std::memcpy(out.data() + h.data_offset + data, stats[i].values.data(), 8 * stats[i].values.size());
    data += static_cast<uint32_t>(8 * stats[i].values.size());
  }
  return out;
}

int MemFd(const std::vector<uint8_t>& bytes) {
  int fd = ::memfd_create("kvm-stats", 0);
  EXPECT_GE(fd, 0);
  EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  return fd;
}

const std::vector<StatSpec> kVcpuStats = {
    {"halt_successful_poll", KVM_STATS_TYPE_CUMULATIVE | KVM_STATS_UNIT_NONE, 0, {5}},
    {"halt_wait_ns", KVM_STATS_TYPE_CUMULATIVE | KVM_STATS_UNIT_SECONDS, -9, {1500000000}},
    {"halt_poll_success_hist", KVM_STATS_TYPE_LOG_HIST | KVM_STATS_UNIT_SECONDS, -9, {1, 2, 3, 4}},
    {"guest_mode", KVM_STATS_TYPE_INSTANT | KVM_STATS_UNIT_BOOLEAN, 0, {1}},
    {"exits", KVM_STATS_TYPE_CUMULATIVE | KVM_STATS_UNIT_NONE, 0, {2029}},
    {"io_exits", KVM_STATS_TYPE_CUMULATIVE | KVM_STATS_UNIT_NONE, 0, {3}},
};

TEST(KvmStatsFd, ParsesHeaderDescriptorsAndData) {
  int fd = MemFd(StatsBytes("kvm-4242/vcpu-0", kVcpuStats));
  auto f = ReadKvmStatsFile(fd);
  ::close(fd);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ(f->id, "kvm-4242/vcpu-0");
  ASSERT_EQ(f->stats.size(), 6u);
  EXPECT_EQ(f->stats[1].name, "halt_wait_ns");
  EXPECT_EQ(f->stats[1].exponent, -9);
  EXPECT_EQ(f->stats[2].values, (std::vector<uint64_t>{1, 2, 3, 4}));
  EXPECT_EQ(f->stats[4].values, (std::vector<uint64_t>{2029}));
  // Only one-value cumulative stats count as counters: no histogram, no instant value.
  auto c = CumulativeCounters(*f);
  EXPECT_EQ(c, (std::map<std::string, uint64_t>{
                   {"exits", 2029}, {"halt_successful_poll", 5}, {"halt_wait_ns", 1500000000}, {"io_exits", 3}}));
}

TEST(KvmStatsFd, RejectsWhatDoesNotFit) {
  auto bytes = StatsBytes("kvm-1/vcpu-0", kVcpuStats);
  int fd = MemFd(std::vector<uint8_t>(bytes.begin(), bytes.end() - 8));  // the last value cut off
  auto cut = ReadKvmStatsFile(fd);
  ::close(fd);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code, kExitDataErr);
  EXPECT_NE(cut.error().message.find("io_exits"), std::string::npos);
  auto zero_names = StatsBytes("kvm-1/vcpu-0", kVcpuStats);
  std::memset(zero_names.data() + offsetof(kvm_stats_header, name_size), 0, 4);
  fd = MemFd(zero_names);
  EXPECT_FALSE(ReadKvmStatsFile(fd).ok());
  ::close(fd);
  fd = MemFd(std::vector<uint8_t>(10, 0));
  EXPECT_FALSE(ReadKvmStatsFile(fd).ok());
  ::close(fd);
}

TEST(KvmStatsFd, FdLinksAndAFakeProc) {
  EXPECT_EQ(ParseKvmFdLink("anon_inode:kvm-vm")->vcpu, -1);
  EXPECT_FALSE(ParseKvmFdLink("anon_inode:kvm-vm")->stats);
  EXPECT_TRUE(ParseKvmFdLink("anon_inode:kvm-vm-stats")->stats);
  EXPECT_EQ(ParseKvmFdLink("anon_inode:kvm-vcpu:12")->vcpu, 12);
  EXPECT_EQ(ParseKvmFdLink("anon_inode:kvm-vcpu-stats:3")->vcpu, 3);
  EXPECT_TRUE(ParseKvmFdLink("anon_inode:kvm-vcpu-stats:3")->stats);
  EXPECT_FALSE(ParseKvmFdLink("anon_inode:kvm-vcpu-stats:").has_value());
  EXPECT_FALSE(ParseKvmFdLink("anon_inode:kvm-device").has_value());
  EXPECT_FALSE(ParseKvmFdLink("anon_inode:kvm-vcpu:").has_value());
  EXPECT_FALSE(ParseKvmFdLink("anon_inode:kvm-vcpu:3x").has_value());
  EXPECT_FALSE(ParseKvmFdLink("/dev/kvm").has_value());
  EXPECT_FALSE(ParseKvmFdLink("anon_inode:[eventfd]").has_value());
  fs::path root = fs::temp_directory_path() / ("exitscope-proc-" + std::to_string(::getpid()));
  fs::remove_all(root);
  fs::create_directories(root / "77" / "fd");
  fs::create_symlink("/dev/kvm", root / "77/fd/3");
  fs::create_symlink("anon_inode:kvm-vm", root / "77/fd/11");
  fs::create_symlink("anon_inode:kvm-vcpu:0", root / "77/fd/14");
  fs::create_symlink("anon_inode:kvm-vcpu:1", root / "77/fd/15");
  fs::create_symlink("anon_inode:kvm-vcpu-stats:0", root / "77/fd/16");
  KvmProcessFds fds = FindKvmFds(root.string(), 77);
  EXPECT_EQ(fds.vm_fds, (std::vector<int>{11}));
  EXPECT_EQ(fds.vcpu_fds, (std::map<int, int>{{0, 14}, {1, 15}}));
  EXPECT_EQ(fds.vcpu_stats_fds, (std::map<int, int>{{0, 16}}));
  // vCPU 1 has no stats fd in the VMM: a sum over the VM would be partial, so the route says so.
  auto vm = ReadVmStatsByFd(root.string(), 77);
  ASSERT_FALSE(vm.ok());
  EXPECT_EQ(vm.error().code, kExitUnavailable);
  EXPECT_NE(vm.error().message.find("vCPU 1"), std::string::npos);
  fs::remove_all(root);
}

}  // namespace
}  // namespace exitscope
