//===- enospc-shim.cpp - a full disk for one file, for tests --------------===//
//
// Preloaded (LD_PRELOAD) into a run: writes to a file whose path contains
// $TITAN_TEST_ENOSPC_PATH fail as on a full filesystem, after a first
// short write (the kernel writes what fits, then says ENOSPC). Every other
// write goes to libc unchanged. Built by the tests that use it, never
// shipped.
//
//===----------------------------------------------------------------------===//

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <dlfcn.h>
#include <sys/types.h>
#include <unistd.h>

namespace {

/// Whether `fd` is open on a file the full disk holds.
bool onFullDisk(int fd) {
  const char *pattern = std::getenv("TITAN_TEST_ENOSPC_PATH");
  if (!pattern || !*pattern)
    return false;
  char link[64], path[PATH_MAX];
  std::snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t n = ::readlink(link, path, sizeof path - 1);
  if (n <= 0)
    return false;
  path[n] = '\0';
  return std::strstr(path, pattern) != nullptr;
}

/// Bytes of a write to the full disk that still fit: half of the first
/// write's, none after it.
size_t fits(size_t count) {
  static bool full = false;
  size_t n = full ? 0 : count / 2;
  full = true;
  return n;
}

template <typename Fn> Fn next(const char *name) {
  return reinterpret_cast<Fn>(::dlsym(RTLD_NEXT, name));
}

} // namespace

extern "C" {

ssize_t pwrite64(int fd, const void *data, size_t count, off64_t offset) {
  using Fn = ssize_t (*)(int, const void *, size_t, off64_t);
  static Fn real = next<Fn>("pwrite64");
  if (onFullDisk(fd)) {
    size_t n = fits(count);
    if (n == 0) {
      errno = ENOSPC;
      return -1;
    }
    return real(fd, data, n, offset);
  }
  return real(fd, data, count, offset);
}

ssize_t pwrite(int fd, const void *data, size_t count, off_t offset) {
  return pwrite64(fd, data, count, offset);
}

} // extern "C"
