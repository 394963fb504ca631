//===- PointwiseInterface.h - an op's scalar semantics ----------*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_POINTWISEINTERFACE_H
#define TITAN_DIALECT_TITAN_IR_POINTWISEINTERFACE_H

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

namespace titan {
/// The shapes of a kernel call's buffers, for an op that reads elements at
/// other indices (PointwiseOpInterface::getElementReads).
struct CallShapes {
  llvm::ArrayRef<llvm::ArrayRef<int64_t>> operands, results;
};
} // namespace titan

#include "titan/Dialect/Titan/IR/PointwiseInterface.h.inc"

namespace titan {
/// The type a pointwise op's scalar body computes in, for buffers of
/// `elementTypes`: f64 when one of them is f64, otherwise f32 (16-bit floats
/// are widened on load and rounded on store, as the GPU's kernels do).
/// std::nullopt when one is not f64, f32, bf16 or f16, or when f64 meets a
/// 16-bit float (a rounding through f32 would round twice).
std::optional<mlir::FloatType> pointwiseComputeType(mlir::TypeRange types);

/// The float constant `value` of type `type` (rounded to it), or of
/// `like`'s type: the scalar bodies' literals.
mlir::Value buildFloatConstant(mlir::OpBuilder &b, mlir::Location loc,
                               mlir::Type type, double value);
inline mlir::Value buildFloatConstantLike(mlir::OpBuilder &b,
                                          mlir::Location loc, mlir::Value like,
                                          double value) {
  return buildFloatConstant(b, loc, like.getType(), value);
}

/// The scalar semantics of the registered op `name` (`titan.<kernel>`), or
/// null when it is not pointwise.
const PointwiseOpInterface::Concept *
lookupPointwiseSemantics(mlir::MLIRContext *ctx, llvm::StringRef name);
} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_POINTWISEINTERFACE_H
