//===- FileIO.cpp - durable file writes and bounded reads -----------------===//

#include "FileIO.h"
#include "Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>

using namespace titanrt;

std::string titanrt::joinPath(llvm::StringRef folder, llvm::StringRef name) {
  llvm::SmallString<256> path(folder);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

int titanrt::openForWriting(const std::string &path, bool create) {
  int flags = O_WRONLY | O_CLOEXEC | (create ? O_CREAT | O_TRUNC : 0);
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0)
    fatal("cannot write '" + path + "': " + std::strerror(errno));
  return fd;
}

int titanrt::openForReading(const std::string &path, const std::string &what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    fatal("cannot read " + what + " '" + path + "': " + std::strerror(errno));
  return fd;
}

void titanrt::writeFully(int fd, const void *data, size_t bytes, int64_t offset,
                         const std::string &path) {
  const char *src = static_cast<const char *>(data);
  while (bytes > 0) {
    ssize_t n = ::pwrite(fd, src, bytes, off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      fatal("writing '" + path + "' failed at byte " + std::to_string(offset) +
            ": " + std::strerror(errno));
    src += n;
    bytes -= size_t(n);
    offset += n;
  }
}

void titanrt::readFully(int fd, void *out, size_t bytes, int64_t offset,
                        const std::string &path) {
  char *dst = static_cast<char *>(out);
  while (bytes > 0) {
    ssize_t n = ::pread(fd, dst, bytes, off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      fatal("reading '" + path + "' failed at byte " + std::to_string(offset) +
            ": " +
            (n == 0 ? "the file is shorter than when it was opened"
                    : std::strerror(errno)));
    dst += n;
    bytes -= size_t(n);
    offset += n;
  }
}

void titanrt::syncAndClose(int fd, const std::string &path) {
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    fatal("writing '" + path + "' failed: " + std::strerror(errno));
}

void titanrt::syncFolder(const std::string &folder) {
  int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || ::fsync(fd) != 0)
    fatal("cannot sync folder '" + folder + "': " + std::strerror(errno));
  ::close(fd);
}

void titanrt::writeFileDurably(const std::string &path,
                               const std::string &text) {
  int fd = openForWriting(path, /*create=*/true);
  writeFully(fd, text.data(), text.size(), 0, path);
  syncAndClose(fd, path);
}
