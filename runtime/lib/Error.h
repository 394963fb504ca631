//===- Error.h - fatal run-time errors --------------------------*- C++ -*-===//

#ifndef TITANRT_LIB_ERROR_H
#define TITANRT_LIB_ERROR_H

#include <string>

namespace titanrt {

/// Prints "error: <message>" to stderr and exits with status 1. Used for bad
/// input (data, checkpoints, arguments) that the run cannot continue from.
[[noreturn]] void fatal(const std::string &message);

/// While it lives, fatal() on this thread adds "; <what>" to its message:
/// what failed in the larger task (a checkpoint's save) and what is left
/// intact, which the call that failed (a write) does not know.
class ErrorContext {
public:
  explicit ErrorContext(std::string what);
  ~ErrorContext();
  ErrorContext(const ErrorContext &) = delete;
  ErrorContext &operator=(const ErrorContext &) = delete;

  /// The message with the contexts of this thread, innermost first.
  static std::string annotate(const std::string &message);

private:
  std::string what_;
  ErrorContext *outer_;
};

/// fatal() for a failure inside a kernel: the message also names the titan
/// op the compiled step was running (the compiled step records each op's
/// location in titan_rt_op before its kernel call; KernelABI.h).
[[noreturn]] void kernelFatal(const std::string &message);

/// How fatal() ends a multi-rank job: set by the communicator to abort every
/// rank (MPI_Abort), so that one rank's error never leaves the others
/// waiting in a collective. Null: exit this process.
using AbortHook = void (*)(const std::string &message);
void setAbortHook(AbortHook hook);

/// Stops the run when `path` exists but is not a regular file (a directory,
/// a device such as /dev/zero, a FIFO, a socket), naming `what` it was
/// given as: reading it would never end or exhaust memory. A missing file
/// is left to the caller's own message.
void requireRegularFile(const std::string &path, const std::string &what);

} // namespace titanrt

#endif // TITANRT_LIB_ERROR_H
