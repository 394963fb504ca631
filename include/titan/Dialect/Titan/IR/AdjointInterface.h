//===- AdjointInterface.h - an op's reverse-mode rule -----------*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_ADJOINTINTERFACE_H
#define TITAN_DIALECT_TITAN_IR_ADJOINTINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

namespace titan {

/// What an op's adjoint rule needs from the differentiation in progress
/// (titan-autodiff implements it).
class AdjointContext {
public:
  virtual ~AdjointContext() = default;
  /// Adds `grad` to the gradient of the forward value `value` (gradients of
  /// a value used several times are summed).
  virtual void addGradient(mlir::Value value, mlir::Value grad) = 0;
  /// `value` as the backward reads it.
  virtual mlir::Value forwardValue(mlir::Value value) = 0;
  /// Whether `value` is provably the same on every rank of the group over
  /// the mesh axes `axes`.
  virtual bool isUniformOver(mlir::Value value, mlir::ArrayAttr axes) = 0;
};

} // namespace titan

#include "titan/Dialect/Titan/IR/AdjointInterface.h.inc"

#endif // TITAN_DIALECT_TITAN_IR_ADJOINTINTERFACE_H
