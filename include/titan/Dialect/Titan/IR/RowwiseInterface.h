//===- RowwiseInterface.h - a row op's scalar semantics ---------*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_ROWWISEINTERFACE_H
#define TITAN_DIALECT_TITAN_IR_ROWWISEINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

#include "titan/Dialect/Titan/IR/RowwiseInterface.h.inc"

namespace titan {
/// The row semantics of the registered op `name` (`titan.<kernel>`), or
/// null when it has none.
const RowwiseOpInterface::Concept *
lookupRowwiseSemantics(mlir::MLIRContext *ctx, llvm::StringRef name);
} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_ROWWISEINTERFACE_H
