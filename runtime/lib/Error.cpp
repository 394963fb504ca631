//===- Error.cpp - fatal run-time errors ----------------------------------===//

#include "Error.h"

#include "llvm/Support/FileSystem.h"

#include <cstdio>
#include <cstdlib>

namespace {
titanrt::AbortHook abortHook = nullptr;
} // namespace

void titanrt::setAbortHook(AbortHook hook) { abortHook = hook; }

extern "C" {
const char *titan_rt_op = nullptr;
}

[[noreturn]] void titanrt::kernelFatal(const std::string &message) {
  if (titan_rt_op && *titan_rt_op)
    fatal(message + " (titan op " + titan_rt_op + ")");
  fatal(message);
}

[[noreturn]] void titanrt::fatal(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::fflush(stderr);
  if (AbortHook hook = abortHook) {
    abortHook = nullptr; // a failure while aborting just exits
    hook(message);
  }
  std::exit(1);
}

void titanrt::requireRegularFile(const std::string &path,
                                 const std::string &what) {
  namespace fs = llvm::sys::fs;
  fs::file_status status;
  if (fs::status(path, status) || !fs::exists(status))
    return;
  const char *kind = nullptr;
  switch (status.type()) {
  case fs::file_type::regular_file:
    return;
  case fs::file_type::directory_file:
    kind = "a directory";
    break;
  case fs::file_type::character_file:
  case fs::file_type::block_file:
    kind = "a device";
    break;
  case fs::file_type::fifo_file:
    kind = "a FIFO";
    break;
  case fs::file_type::socket_file:
    kind = "a socket";
    break;
  default:
    kind = "not a regular file";
    break;
  }
  fatal(what + " '" + path + "' is " + kind + ", not a regular file");
}
