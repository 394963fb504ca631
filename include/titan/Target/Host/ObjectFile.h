//===- ObjectFile.h - a lowered step as a host object file ------*- C++ -*-===//
//
// Every target's step is host code: a straight line of calls into
// libtitanrt's titan_rt_* entries (kernel-to-runtime-calls), which then run
// the target's kernels. This writes such a module as a relocatable object
// for the host, with the manifest embedded, in process. It links LLVM's
// code generators, so the target backends' registry only calls it once a
// program registers it (registerHostObjectEmitter).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TARGET_HOST_OBJECTFILE_H
#define TITAN_TARGET_HOST_OBJECTFILE_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

namespace titan {

/// Adds `symbol` (`titan_manifest`), a NUL-terminated external constant
/// string, to a module already lowered to the LLVM dialect.
void embedManifest(mlir::ModuleOp module, llvm::StringRef manifest,
                   llvm::StringRef symbol = "titan_manifest");

/// Translates an LLVM-dialect module to LLVM IR and writes a relocatable
/// object for the host to `path`, in process.
llvm::Error emitObjectFile(mlir::ModuleOp module, llvm::StringRef path);

/// Makes emitObjectFile the target backends' default object emission
/// (target::setHostObjectEmitter): a program that writes objects calls it
/// once, before TargetBackend::emitObject.
void registerHostObjectEmitter();

} // namespace titan

#endif // TITAN_TARGET_HOST_OBJECTFILE_H
