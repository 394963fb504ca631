//===- Manifest.h - a compiled program's manifest ---------------*- C++ -*-===//
//
// Fills the manifest (titan/Contract/Manifest.h) that a training executable
// carries from the compiled program: its parameters and shardings, its
// mesh, and the memory plan the runtime places its state by.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DRIVER_MANIFEST_H
#define TITAN_DRIVER_MANIFEST_H

#include "titan/Compiler/ConfigPipelineOptions.h"
#include "titan/Contract/Manifest.h"
#include "titan/Target/TargetBackend.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace titan {
struct LlamaArgs;
struct TrainConfig;

namespace driver {

/// What the executable knows of its model (titan/Contract/Manifest.h): the
/// compiled config, the step's static shapes, the parameters with their
/// whole and local shapes and shardings, the mesh. `module` is the
/// partitioned program. The parameters are those of `functions` (each once,
/// in order of first appearance: a pipeline rank's stage programs). An
/// error names a parameter that the model does not have.
llvm::Expected<manifest::Manifest>
buildManifest(const LlamaArgs &args, const TrainConfig &config,
              mlir::ModuleOp module,
              llvm::ArrayRef<std::string> functions = {"forward"});

/// Adds the memory plan of the planned kernel-IR `module` to `manifest`:
/// the arena's bytes and its slots, where the runtime places its state, and
/// the mesh-axis groups of the collectives.
void addArenaToManifest(manifest::Manifest &manifest, mlir::ModuleOp module);

/// Completes the manifest of a program planned as the kernel-IR `module`
/// for `mesh` and `target` (`cudaArch` for a target with
/// TargetFeatures::deviceArch): its memory plan (addArenaToManifest), the
/// eval step's batch and sequence length (validation.enable), the
/// microbatches per optimizer step and the target's name.
void addProgramToManifest(manifest::Manifest &manifest,
                          const TrainConfig &config, const MeshDegrees &mesh,
                          const target::TargetBackend &target,
                          llvm::StringRef cudaArch, mlir::ModuleOp module);

} // namespace driver
} // namespace titan

#endif // TITAN_DRIVER_MANIFEST_H
