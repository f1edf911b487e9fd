#include "sources/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace exitscope {

Error InputOpenError(const std::string& path, int err) {
  if (err == EACCES || err == EPERM) {
    return MakeError(kExitNoPerm, "input.permission", "cannot read '" + path + "': " + std::strerror(err),
                     "trace files written by root (trace-cmd, perf) are often mode 0600; use sudo, or chown "
                     "the file");
  }
  return MakeError(kExitNoInput, "input.missing", "cannot open '" + path + "': " + std::strerror(err),
                   "check the path; trace-cmd and perf write trace.dat / perf.data in the directory they ran in");
}

Result<std::unique_ptr<MappedFile>> MappedFile::Open(const std::string& path, size_t lookahead) {
  const bool from_stdin = path == kStdinPath;
  // Reading a terminal would wait for a trace typed by hand: say what "-" expects instead.
  if (from_stdin && ::isatty(STDIN_FILENO)) {
    return MakeError(kExitNoInput, "input.stdin-terminal", "'-' reads the trace from stdin, which is a terminal",
                     "pipe a trace in (`zcat trace.txt.gz | exitscope report -`) or pass its path");
  }
  int fd = from_stdin ? ::fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0) : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return InputOpenError(from_stdin ? "stdin" : path, errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    ::close(fd);
    return MakeError(kExitNoInput, "input.not-a-file", "'" + path + "' is not a file",
                     "pass a trace file (trace.dat, perf.data or trace text), not a directory");
  }
  auto file = std::unique_ptr<MappedFile>(new MappedFile());
  file->path_ = path;
  // stdin redirected from a file is mapped too, unless something already read part of it.
  if (S_ISREG(st.st_mode) && st.st_size > 0 && (!from_stdin || ::lseek(fd, 0, SEEK_CUR) == 0)) {
    void* p = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      ::madvise(p, static_cast<size_t>(st.st_size), MADV_SEQUENTIAL);
      file->data_ = static_cast<const uint8_t*>(p);
      file->size_ = static_cast<size_t>(st.st_size);
      file->mapped_ = true;
      file->read_fd_ = fd;
      return file;
    }
  }
  // Pipes, FIFOs, /dev/stdin, or a file system without mmap: read them (up to the look-ahead).
  file->fd_ = fd;
  if (Status read = file->ReadUpTo(lookahead); !read.ok()) return read.error();
  return file;
}

Status MappedFile::ReadUpTo(size_t limit) {
  if (fd_ < 0) return Status::Ok();  // mapped, a view, or already read to its end
  uint8_t buf[1 << 16];
  while (fd_ >= 0 && owned_.size() < limit) {
    ssize_t n = ::read(fd_, buf, std::min(sizeof(buf), limit - owned_.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      ::close(fd_);
      fd_ = -1;
      return MakeError(kExitIoErr, "input.read", "cannot read '" + path_ + "': " + std::strerror(err));
    }
    if (n == 0) {
      ::close(fd_);
      fd_ = -1;
      break;
    }
    owned_.insert(owned_.end(), buf, buf + n);
  }
  data_ = owned_.data();
  size_ = owned_.size();
  return Status::Ok();
}

Status MappedFile::ReadRest() { return ReadUpTo(SIZE_MAX); }

std::unique_ptr<MappedFile> MappedFile::View(std::span<const uint8_t> bytes, const std::string& name) {
  auto file = std::unique_ptr<MappedFile>(new MappedFile());
  file->data_ = bytes.data();
  file->size_ = bytes.size();
  file->path_ = name;
  return file;
}

MappedFile::~MappedFile() {
  if (mapped_) ::munmap(const_cast<uint8_t*>(data_), size_);
  if (fd_ >= 0) ::close(fd_);
  if (read_fd_ >= 0) ::close(read_fd_);
}

void MappedFile::ReadAt(uint64_t offset, size_t size, uint8_t* out) const {
  size_t done = 0;
  while (read_fd_ >= 0 && done < size) {
    ssize_t n = ::pread(read_fd_, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  if (done < size) std::memcpy(out + done, data_ + offset + done, size - done);
}

void MappedFile::Prefault(uint64_t offset, uint64_t size) const {
#ifdef MADV_POPULATE_READ
  if (!mapped_ || offset >= size_) return;
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const uint64_t start = offset / page * page;
  const uint64_t end = offset + std::min<uint64_t>(size, size_ - offset);
  ::madvise(const_cast<uint8_t*>(data_) + start, end - start, MADV_POPULATE_READ);  // EINVAL before 5.14: fine
#else
  (void)offset;
  (void)size;
#endif
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
