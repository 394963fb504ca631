//===- Manifest.h - what a training executable knows of its model -*- C++
//-*-===//

#ifndef TITAN_TOOLS_TITAN_COMPILE_MANIFEST_H
#define TITAN_TOOLS_TITAN_COMPILE_MANIFEST_H

#include "titan/Contract/Manifest.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace titan {
struct LlamaArgs;
struct TrainConfig;

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
} // namespace titan

#endif // TITAN_TOOLS_TITAN_COMPILE_MANIFEST_H
