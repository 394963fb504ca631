//===- GradientNorm.h - the global gradient norm over shards ----*- C++ -*-===//
//
// torch.nn.utils.clip_grad_norm_'s total norm of the unsharded model, built
// from the local shards each rank holds: titan-optimizer computes it from all
// gradients at once, titan-optimizer-in-backward from each model unit's as
// they become final.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_TRANSFORMS_GRADIENTNORM_H
#define TITAN_DIALECT_TITAN_TRANSFORMS_GRADIENTNORM_H

#include "titan/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/Builders.h"

#include <map>
#include <string>
#include <vector>

namespace titan {

/// The mesh axes, in mesh order, over which a gradient's sum of squares is
/// all-reduced: those that shard its parameter, plus the pipeline axis when
/// `pipelined` (each pipeline rank holds other parameters). Gradients of
/// parameters replicated over an axis are counted once.
std::vector<std::string> gradientNormAxes(dist::ShardingAttr sharding,
                                          bool pipelined);

/// Sums of squared gradient norms by the axes they are reduced over.
using SquaredNormGroups = std::map<std::vector<std::string>, mlir::Value>;

/// A gradient and the sharding of its parameter.
struct ShardedGradient {
  mlir::Value grad;
  dist::ShardingAttr sharding;
};

/// Adds the squared norms of `grads` to `groups`: one titan.global_norm per
/// group of gradients reduced over the same axes (gradientNormAxes).
void addGradientSquares(mlir::OpBuilder &b, mlir::Location loc,
                        SquaredNormGroups &groups,
                        llvm::ArrayRef<ShardedGradient> grads, bool pipelined);

/// sqrt of the sum over groups of each group's sum all-reduced over its
/// axes (one scalar all-reduce per sharded group); `groups` is not empty.
mlir::Value buildNormFromSquares(mlir::OpBuilder &b, mlir::Location loc,
                                 const SquaredNormGroups &groups);

} // namespace titan

#endif // TITAN_DIALECT_TITAN_TRANSFORMS_GRADIENTNORM_H
