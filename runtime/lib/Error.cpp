//===- Error.cpp - fatal run-time errors ----------------------------------===//

#include "Error.h"
#include "RankShutdown.h"

#include "llvm/Support/FileSystem.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <utility>

namespace {
std::atomic<titanrt::AbortHook> abortHook{nullptr};
/// Set once a thread runs the hook: a failure on another thread (the
/// communicator's progress thread, say) then waits for that one to stop
/// every rank instead of exiting under it.
std::atomic<bool> aborting{false};
thread_local bool inAbortHook = false;
thread_local titanrt::ErrorContext *innermostContext = nullptr;
} // namespace

titanrt::ErrorContext::ErrorContext(std::string what)
    : what_(std::move(what)), outer_(innermostContext) {
  innermostContext = this;
}

titanrt::ErrorContext::~ErrorContext() { innermostContext = outer_; }

std::string titanrt::ErrorContext::annotate(const std::string &message) {
  std::string text = message;
  for (ErrorContext *c = innermostContext; c; c = c->outer_)
    text += "; " + c->what_;
  return text;
}

void titanrt::setAbortHook(AbortHook hook) { abortHook = hook; }

extern "C" {
const char *titan_rt_op = nullptr;
char *titan_rt_host_arena = nullptr;
}

[[noreturn]] void titanrt::kernelFatal(const std::string &message) {
  if (titan_rt_op && *titan_rt_op)
    fatal(message + " (titan op " + titan_rt_op + ")");
  fatal(message);
}

[[noreturn]] void titanrt::fatal(const std::string &plain) {
  std::string message = ErrorContext::annotate(plain);
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::fflush(stderr);
  // A failure while aborting just exits, without static destructors (they
  // would join the thread that may be the one failing).
  if (inAbortHook)
    std::_Exit(1);
  if (AbortHook hook = abortHook.exchange(nullptr)) {
    inAbortHook = true;
    aborting = true;
    noteStopUnderWay();
    hook(message);
  } else if (aborting) {
    for (;;)
      std::this_thread::sleep_for(std::chrono::seconds(1));
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
