//===- CPUTarget.h - object emission and linking for the CPU ----*- C++ -*-===//

#ifndef TITAN_TARGET_CPU_CPUTARGET_H
#define TITAN_TARGET_CPU_CPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

namespace titan {

/// Adds `titan_manifest`, a NUL-terminated external constant string, to a
/// module already lowered to the LLVM dialect.
void embedManifest(mlir::ModuleOp module, llvm::StringRef manifest);

/// Translates an LLVM-dialect module to LLVM IR, optimizes it and writes a
/// relocatable object for the host to `path`, in process.
llvm::Error emitObjectFile(mlir::ModuleOp module, llvm::StringRef path);

/// Links `objectPath` with libtitanrt (found in `runtimeDir`) into the
/// training executable `outputPath`, with the system C++ driver ($CXX or
/// c++).
llvm::Error linkTrainingExecutable(llvm::StringRef objectPath,
                                   llvm::StringRef outputPath,
                                   llvm::StringRef runtimeDir);

} // namespace titan

#endif // TITAN_TARGET_CPU_CPUTARGET_H
