#include "sources/mapped_input.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace exitscope {

namespace {

Error OpenError(const std::string& path, int err) {
  if (err == EACCES || err == EPERM) {
    return MakeError(kExitNoPerm, "input.permission", "cannot read '" + path + "': " + std::strerror(err),
                     "check the file's permissions (perf.data is often root-owned: chown or sudo)");
  }
  return MakeError(kExitNoInput, "input.open", "cannot open '" + path + "': " + std::strerror(err),
                   "check the path");
}

}  // namespace

Result<std::unique_ptr<MappedInput>> MappedInput::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return OpenError(path, errno);
  std::unique_ptr<MappedInput> in(new MappedInput());
  in->path_ = path;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      ::madvise(p, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
      in->data_ = static_cast<const uint8_t*>(p);
      in->size_ = static_cast<size_t>(st.st_size);
      in->mapped_ = true;
      ::close(fd);
      return in;
    }
  }
  // Pipes, FIFOs, /dev/stdin, or a filesystem without mmap: read it all.
  uint8_t buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd);
      return MakeError(kExitIoErr, "input.read", "cannot read '" + path + "': " + std::strerror(err));
    }
    if (n == 0) break;
    in->owned_.insert(in->owned_.end(), buf, buf + n);
  }
  ::close(fd);
  in->data_ = in->owned_.data();
  in->size_ = in->owned_.size();
  return in;
}

MappedInput::~MappedInput() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace exitscope
