//===- RowwiseInterface.h - a row op's scalar semantics ---------*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_ROWWISEINTERFACE_H
#define TITAN_DIALECT_TITAN_IR_ROWWISEINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

namespace titan {
/// What a row op's scalar body (RowwiseOpInterface::buildRowScalar) builds
/// its row-wide values with.
struct RowBuilders {
  /// The sum over the element's row of a value (f32 or f64).
  llvm::function_ref<mlir::Value(mlir::Value)> sum;
  /// The largest of a value over the row (NaN wins, as torch.max).
  llvm::function_ref<mlir::Value(mlir::Value)> max;
  /// log(sum(exp(value))) over the row, shifted by its max (one read of
  /// the row where the target can).
  llvm::function_ref<mlir::Value(mlir::Value)> logSumExp;
  /// The element's column (i64, 0 to C - 1).
  llvm::function_ref<mlir::Value()> column;
};
} // namespace titan

#include "titan/Dialect/Titan/IR/RowwiseInterface.h.inc"

namespace titan {
/// The row semantics of the registered op `name` (`titan.<kernel>`), or
/// null when it has none.
const RowwiseOpInterface::Concept *
lookupRowwiseSemantics(mlir::MLIRContext *ctx, llvm::StringRef name);
} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_ROWWISEINTERFACE_H
