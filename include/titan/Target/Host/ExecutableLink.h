//===- ExecutableLink.h - the training executable's link --------*- C++ -*-===//
//
// A training executable is the steps' host objects linked with libtitanrt
// and a target's kernel libraries by the system C++ driver. The target's
// part of the link is its backend's TargetLink
// (titan/Target/TargetBackend.h).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TARGET_HOST_EXECUTABLELINK_H
#define TITAN_TARGET_HOST_EXECUTABLELINK_H

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace titan {

/// What a training executable links besides the step's object.
struct RuntimeLink {
  /// Where libtitanrt, its main() and the kernel libraries are.
  std::string runtimeDir;
  /// The target's kernel libraries and what they need, linked before
  /// libtitanrt (which they call) in this order: `-l<name>` for a library
  /// in `runtimeDir`, or a file's path (a static archive, whose objects
  /// and GPU code become part of the executable, or a shared library):
  /// TargetLink's.
  std::vector<std::string> kernelLibraries;
  /// Shared libraries linked after libtitanrt (TargetLink's).
  std::vector<std::string> systemLibraries;
  /// Folders searched at run time after the executable's own folder and
  /// `runtimeDir` (TargetLink's).
  std::vector<std::string> libraryDirs;
  /// More objects or C++ sources linked with the step's object (a
  /// pipeline-parallel executable's other ranks' programs and their table,
  /// which defines main(), so libtitanrt_main's single-program main() is
  /// not linked).
  std::vector<std::string> extraInputs;
  /// The C++ driver, used when $CXX is not set (empty: c++).
  std::string driver;
  /// Flags for the C++ driver (a sanitized build's -fsanitize=...).
  std::vector<std::string> driverFlags;
};

/// Links `objectPath` with libtitanrt and the target's kernel libraries
/// into the training executable `outputPath`, with the C++ driver ($CXX,
/// else `link.driver`, else c++). The executable finds its libraries beside
/// itself first ($ORIGIN, so a folder with the executable and the libraries
/// can be moved to another machine), then in `runtimeDir` and
/// `libraryDirs`.
llvm::Error linkTrainingExecutable(llvm::StringRef objectPath,
                                   llvm::StringRef outputPath,
                                   const RuntimeLink &link);

} // namespace titan

#endif // TITAN_TARGET_HOST_EXECUTABLELINK_H
