//===- Manifest.h - what a training executable knows of its model -*- C++
//-*-===//

#ifndef TITAN_TOOLS_TITAN_COMPILE_MANIFEST_H
#define TITAN_TOOLS_TITAN_COMPILE_MANIFEST_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace titan {
struct LlamaArgs;
struct TrainConfig;

/// The JSON manifest embedded in a training executable: the compiled
/// configuration (TOML), the parameters (name, shape) in the argument order
/// of `forward`, and the step's static shapes (see runtime/Trainer.h). An
/// error names a parameter of `forward` that the model does not have.
/// What the executable knows of its model (JSON): the compiled config, the
/// parameters with their whole and local shapes and shardings, the mesh.
/// `module` is the partitioned program.
/// The parameters are those of `functions` (each once, in order of first
/// appearance: a pipeline rank's stage programs).
llvm::Expected<llvm::json::Object>
buildManifest(const LlamaArgs &args, const TrainConfig &config,
              mlir::ModuleOp module,
              llvm::ArrayRef<std::string> functions = {"forward"});

/// Adds the memory plan of the planned kernel-IR `module` to `manifest`:
/// `arena_bytes` and `slots` ({name: [offset, bytes]}), where the runtime
/// places its state.
void addArenaToManifest(llvm::json::Object &manifest, mlir::ModuleOp module);

/// The manifest as the text the executable embeds.
std::string printManifest(const llvm::json::Object &manifest);
} // namespace titan

#endif // TITAN_TOOLS_TITAN_COMPILE_MANIFEST_H
