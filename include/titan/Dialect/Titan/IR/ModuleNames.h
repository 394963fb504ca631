//===- ModuleNames.h - the TorchTitan module an op came from ----*- C++ -*-===//
//
// The importer names every op's location after the TorchTitan module that
// computes it ("tok_embeddings", "layers.3.attention.wq", "norm"); passes
// that work per module (pipeline stages, recompute regions, Float8's
// filter_fqns) read it back through these helpers.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_IR_MODULENAMES_H
#define TITAN_DIALECT_TITAN_IR_MODULENAMES_H

#include "mlir/IR/Location.h"

#include <optional>
#include <string>

namespace titan {

/// The module an op belongs to: the first name in its location.
std::optional<llvm::StringRef> getModuleName(mlir::Location loc);

/// Whether `name` is `module` or one of its submodules.
bool isInModule(llvm::StringRef name, llvm::StringRef module);

/// The transformer block `name` is in ("layers.<i>" or below it).
std::optional<int64_t> getLayerIndex(llvm::StringRef name);

/// The model unit a module or parameter name belongs to: its transformer
/// block ("layers.3"), else its top module ("tok_embeddings", "output"):
/// what one multi-tensor launch covers, and where titan-optimizer-in-
/// backward delays an update to.
std::string getModelUnit(llvm::StringRef name);

} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_MODULENAMES_H
