//===- Manifest.h - what a training executable knows of its model -*- C++
//-*-===//

#ifndef TITAN_TOOLS_TITAN_COMPILE_MANIFEST_H
#define TITAN_TOOLS_TITAN_COMPILE_MANIFEST_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/Error.h"

#include <string>

namespace titan {
struct LlamaArgs;
struct TrainConfig;

/// The JSON manifest embedded in a training executable: the compiled
/// configuration (TOML), the parameters (name, shape) in the argument order
/// of `forward`, and the step's static shapes (see runtime/Trainer.h). An
/// error names a parameter of `forward` that the model does not have.
llvm::Expected<std::string> buildManifest(const LlamaArgs &args,
                                          const TrainConfig &config,
                                          mlir::ModuleOp module);
} // namespace titan

#endif // TITAN_TOOLS_TITAN_COMPILE_MANIFEST_H
