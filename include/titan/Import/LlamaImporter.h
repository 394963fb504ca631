//===- LlamaImporter.h - Llama model -> titan IR ----------------*- C++ -*-===//

#ifndef TITAN_IMPORT_LLAMAIMPORTER_H
#define TITAN_IMPORT_LLAMAIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace titan {

struct LlamaArgs;

/// Shapes of one imported training step.
struct ImportOptions {
  int64_t batchSize = 1; ///< sequences per step (the local batch)
  int64_t seqLen = 2048;
  mlir::Type elementType; ///< parameter/activation type; f32 if null
  llvm::StringRef funcName = "forward";
};

/// Builds the forward graph of a Llama model as a `func.func` in the titan
/// dialect: its arguments are every parameter (tagged `titan.param` with its
/// TorchTitan name, in state-dict order), then `tokens` and `labels`
/// (`batch x seq` i32, tagged `titan.input`); it returns the mean
/// cross-entropy loss. Ops carry `NameLoc`s with the module path they come
/// from (e.g. "layers.3.attention"); the function carries TorchTitan's
/// parallel plan as attributes (LlamaPlan.h).
mlir::OwningOpRef<mlir::ModuleOp> importLlama(mlir::MLIRContext &context,
                                              const LlamaArgs &args,
                                              const ImportOptions &options);

} // namespace titan

#endif // TITAN_IMPORT_LLAMAIMPORTER_H
