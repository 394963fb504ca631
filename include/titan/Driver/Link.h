//===- Link.h - a compiled job's objects and executable ---------*- C++ -*-===//
//
// The last steps of a compilation: each lowered program written as an
// object by the target's backend, and the objects linked with the runtime
// and what the backend adds (its TargetLink) into one training executable.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_LINK_H
#define TITAN_DRIVER_LINK_H

#include "titan/Target/TargetBackend.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace titan {
namespace driver {

/// Where libtitanrt and the targets' kernel libraries are:
/// $TITAN_RUNTIME_DIR, else this build's library folder.
std::string runtimeDir();

/// What a training executable is made of.
struct LinkInputs {
  /// The programs' objects: one, or one per pipeline rank in rank order.
  std::vector<std::string> objects;
  /// Under pipeline parallelism each rank's step functions (its manifest
  /// is `titan_pp<r>_manifest`); the executable then gets their table and
  /// a main() that hands each rank its program. Empty: one program, run
  /// by libtitanrt_main's main().
  std::vector<std::vector<std::string>> pipelinePrograms;
  /// The executable written.
  std::string outputPath;
  /// Its programs have host steps (training.enable_cpu_offload's
  /// optimizer): it also links libtitanrt_host, whose titan_rt_host_*
  /// entries run their kernels.
  bool hostSteps = false;
};

/// Links `inputs` with libtitanrt and what `target` links
/// (getTargetLink(runtimeDir())), with the driver flags this titan was
/// built with (a sanitized build's runtime needs the sanitizers'). Errors
/// say which file could not be written or what the C++ driver reported.
llvm::Error linkExecutable(const LinkInputs &inputs,
                           const target::TargetBackend &target);

/// Writes the lowered (LLVM dialect) `module` as `target`'s object file
/// (its emitObject): `path`, or with `path` empty a temporary file named
/// after `tempPrefix`, which the caller removes. Returns the object's path.
llvm::Expected<std::string> writeObject(mlir::ModuleOp module,
                                        llvm::StringRef path,
                                        llvm::StringRef tempPrefix,
                                        const target::TargetBackend &target);

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_LINK_H
