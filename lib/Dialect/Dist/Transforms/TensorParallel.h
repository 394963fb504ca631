//===- TensorParallel.h - per-rank activations under TP + SP ----*- C++ -*-===//

#ifndef TITAN_LIB_DIALECT_DIST_TRANSFORMS_TENSORPARALLEL_H
#define TITAN_LIB_DIALECT_DIST_TRANSFORMS_TENSORPARALLEL_H

#include "titan/Dialect/Dist/IR/Dist.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"

namespace titan::dist {

/// Rewrites the ops of `forward` to the tensor-parallel rank's program: each
/// value takes its per-rank type and collectives over `tp` are inserted
/// where layouts change (sequence-parallel gathers and reduce-scatters,
/// vocabulary-parallel embedding and cross-entropy). `paramShardDims` maps
/// each parameter value, as the model's ops use it (after FSDP gathers), to
/// the dimension `tp` splits (parameters absent are replicated over `tp`).
/// With `lossParallel` the cross-entropy runs on vocabulary-sharded logits;
/// otherwise the logits are gathered first.
mlir::LogicalResult partitionTensorParallel(
    mlir::func::FuncOp forward, MeshAttr mesh,
    const llvm::DenseMap<mlir::Value, int64_t> &paramShardDims,
    bool lossParallel);

} // namespace titan::dist

#endif // TITAN_LIB_DIALECT_DIST_TRANSFORMS_TENSORPARALLEL_H
