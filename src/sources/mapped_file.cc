#include "sources/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace exitscope {

Result<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == EACCES || err == EPERM) {
      return MakeError(kExitNoPerm, "input.permission", "cannot read '" + path + "': " + std::strerror(err),
                       "trace files written by root are often mode 0600; use sudo or chmod");
    }
    return MakeError(kExitNoInput, "input.missing", "cannot open '" + path + "': " + std::strerror(err),
                     "check the path; trace-cmd writes trace.dat in the directory it ran in");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return MakeError(kExitNoInput, "input.not-a-file", "'" + path + "' is not a regular file",
                     "pass a trace file (trace.dat), not a directory or a pipe");
  }
  auto file = std::unique_ptr<MappedFile>(new MappedFile());
  file->size_ = static_cast<size_t>(st.st_size);
  if (file->size_ > 0) {
    void* p = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      return MakeError(kExitIoErr, "input.mmap", "cannot map '" + path + "': " + std::strerror(err),
                       "the file system may not support mmap; copy the file to a local disk");
    }
    file->data_ = static_cast<const uint8_t*>(p);
    file->mapped_ = true;
    ::madvise(p, file->size_, MADV_SEQUENTIAL);
  }
  ::close(fd);
  return file;
}

std::unique_ptr<MappedFile> MappedFile::View(std::span<const uint8_t> bytes) {
  auto file = std::unique_ptr<MappedFile>(new MappedFile());
  file->data_ = bytes.data();
  file->size_ = bytes.size();
  return file;
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

void MappedFile::Release(uint64_t offset, uint64_t size) const {
  if (!mapped_) return;
  long page = ::sysconf(_SC_PAGESIZE);
  uint64_t start = (offset + page - 1) / page * page;
  uint64_t end = (offset + size) / page * page;
  if (end > start && end <= size_) {
    ::madvise(const_cast<uint8_t*>(data_) + start, end - start, MADV_DONTNEED);
  }
}

}  // namespace exitscope
