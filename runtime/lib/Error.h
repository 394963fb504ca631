//===- Error.h - fatal run-time errors --------------------------*- C++ -*-===//

#ifndef TITANRT_LIB_ERROR_H
#define TITANRT_LIB_ERROR_H

#include <string>

namespace titanrt {

/// Prints "error: <message>" to stderr and exits with status 1. Used for bad
/// input (data, checkpoints, arguments) that the run cannot continue from.
[[noreturn]] void fatal(const std::string &message);

} // namespace titanrt

#endif // TITANRT_LIB_ERROR_H
