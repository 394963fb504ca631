//===- CPUTarget.h - object emission and linking for the CPU ----*- C++ -*-===//

#ifndef TITAN_TARGET_CPU_CPUTARGET_H
#define TITAN_TARGET_CPU_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace titan {

/// Adds `symbol` (`titan_manifest`), a NUL-terminated external constant
/// string, to a module already lowered to the LLVM dialect.
void embedManifest(mlir::ModuleOp module, llvm::StringRef manifest,
                   llvm::StringRef symbol = "titan_manifest");

/// Translates an LLVM-dialect module to LLVM IR, optimizes it and writes a
/// relocatable object for the host to `path`, in process.
llvm::Error emitObjectFile(mlir::ModuleOp module, llvm::StringRef path);

/// What a training executable links besides the step's object.
struct RuntimeLink {
  /// Where libtitanrt, its main() and the kernel libraries are.
  std::string runtimeDir;
  /// The target's kernel library and what it needs, linked before
  /// libtitanrt (which they call) in this order: `-l<name>` for a library
  /// in `runtimeDir`, or a file's path (a static archive, whose objects
  /// and GPU code become part of the executable, or a shared library).
  std::vector<std::string> kernelLibraries = {"-ltitanrt_cpu"};
  /// Shared libraries linked after libtitanrt (the CUDA libraries).
  std::vector<std::string> systemLibraries;
  /// Folders searched at run time after the executable's own folder and
  /// `runtimeDir` (the CUDA libraries').
  std::vector<std::string> libraryDirs;
  /// More objects or C++ sources linked with the step's object (a
  /// pipeline-parallel executable's other ranks' programs and their table,
  /// which defines main(), so libtitanrt_main's single-program main() is
  /// not linked).
  std::vector<std::string> extraInputs;
  /// Flags for the C++ driver (a sanitized build's -fsanitize=...).
  std::vector<std::string> driverFlags;
};

/// Links `objectPath` with libtitanrt and the target's kernel library into
/// the training executable `outputPath`, with the system C++ driver ($CXX
/// or c++). The executable finds its libraries beside itself first
/// ($ORIGIN, so a folder with the executable and the libraries can be moved
/// to another machine), then in `runtimeDir` and `libraryDirs`.
llvm::Error linkTrainingExecutable(llvm::StringRef objectPath,
                                   llvm::StringRef outputPath,
                                   const RuntimeLink &link);

} // namespace titan

#endif // TITAN_TARGET_CPU_CPUTARGET_H
