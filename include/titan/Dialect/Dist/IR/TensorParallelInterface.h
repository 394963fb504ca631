//===- TensorParallelInterface.h - an op's TP + SP rule ---------*- C++ -*-===//

#ifndef TITAN_DIALECT_DIST_IR_TENSORPARALLELINTERFACE_H
#define TITAN_DIALECT_DIST_IR_TENSORPARALLELINTERFACE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OpDefinition.h"

namespace titan::dist {

/// A value's distribution over the tp ranks (Megatron/DTensor's layouts).
struct Layout {
  int64_t dim = -1;     ///< the dimension split over tp, or -1
  bool partial = false; ///< each rank holds a term of the sum
  bool isReplicated() const { return dim < 0 && !partial; }
  bool operator==(const Layout &o) const {
    return dim == o.dim && partial == o.partial;
  }
  static Layout split(int64_t d) { return {d, false}; }
  static Layout pending() { return {-1, true}; }
};

/// What an op's tensor-parallel rule may ask of dist-partition's rewrite of
/// the forward function (lib/Dialect/Dist/Transforms/TensorParallel.cpp).
class TensorParallelRewriter {
public:
  virtual ~TensorParallelRewriter() = default;
  /// The builder, at the op being rewritten.
  virtual mlir::OpBuilder &getBuilder() = 0;
  /// The tp degree, the ["tp"] axis list, and whether the loss is computed
  /// on vocabulary-sharded logits.
  virtual int64_t getDegree() const = 0;
  virtual mlir::ArrayAttr getAxes() const = 0;
  virtual bool isLossParallel() const = 0;

  virtual Layout getLayout(mlir::Value v) const = 0;
  /// Gives `v` (of its global type) layout `l` and its per-rank type.
  virtual void setLayout(mlir::Value v, Layout l) = 0;
  /// `v` as every tp rank's whole value (gathered or reduced once, reused).
  virtual mlir::Value replicated(mlir::Value v) = 0;
  /// Replaces the op's operands by their replicated forms.
  virtual void replicateOperands(mlir::Operation *op) = 0;
  /// Results take the operands' common split layout; operands of mixed
  /// layouts are replicated first (elementwise ops).
  virtual mlir::LogicalResult propagateElementwise(mlir::Operation *op) = 0;
  /// Reduce-scatters the op's partial result along the sequence (sequence
  /// parallel) and redirects its users to the shard.
  virtual mlir::LogicalResult scatterAlongSequence(mlir::Operation *op) = 0;
  /// This rank's first row of a table split over tp with `localRows` rows
  /// per rank (a dist.shard_offset at the function's start).
  virtual mlir::Value vocabStart(mlir::Location loc, int64_t localRows) = 0;
};

/// Attaches the titan ops' tensor-parallel rules.
void registerTensorParallelModels(mlir::DialectRegistry &registry);

} // namespace titan::dist

#include "titan/Dialect/Dist/IR/TensorParallelInterface.h.inc"

#endif // TITAN_DIALECT_DIST_IR_TENSORPARALLELINTERFACE_H
