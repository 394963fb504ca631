//===- Recompute.h - recompute regions in the backward ----------*- C++ -*-===//
//
// titan-autodiff's half of activation checkpointing: the regions
// titan-activation-checkpoint marked are computed again in the backward.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_TRANSFORMS_RECOMPUTE_H
#define TITAN_DIALECT_TITAN_TRANSFORMS_RECOMPUTE_H

#include "titan/Dialect/Titan/IR/AdjointInterface.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace titan {

/// The recompute regions of a step's forward ops and their copies in its
/// backward. Built before the backward; the backward builder calls
/// `beforeAdjoint` for each forward op it differentiates, in reverse, and
/// `redirectBackward` once it is done.
class RegionRecompute {
public:
  /// `forwardOps`: the step's forward ops in program order; `step`: the
  /// function they are in (its arguments tagged titan.param are weights).
  RegionRecompute(mlir::func::FuncOp step,
                  llvm::ArrayRef<mlir::Operation *> forwardOps);

  /// Before the adjoint of `op` is built at `b`'s insertion point: the
  /// first time the backward reaches a region, copies the ops of the region
  /// it recomputes there, in program order. Weights are read through
  /// `ctx.forwardValue` (re-gathered as the backward's are).
  void beforeAdjoint(mlir::Operation *op, mlir::OpBuilder &b,
                     AdjointContext &ctx);

  /// Once the backward is built: its ops read the copies instead of the
  /// forward's values, and copies nothing reads are erased.
  void redirectBackward();

private:
  /// The forward ops of each region that the backward recomputes, in
  /// program order.
  llvm::MapVector<int64_t, llvm::SmallVector<mlir::Operation *>> recomputed;
  llvm::DenseSet<mlir::Operation *> forwardSet;
  /// Forward values computed from the step's inputs (not weights alone).
  llvm::DenseSet<mlir::Value> activations;
  /// Forward values and their copies, per region.
  llvm::DenseMap<int64_t, mlir::IRMapping> copies;
  llvm::SmallVector<mlir::Operation *> copyOps;
};

} // namespace titan

#endif // TITAN_DIALECT_TITAN_TRANSFORMS_RECOMPUTE_H
