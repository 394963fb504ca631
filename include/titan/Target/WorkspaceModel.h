//===- WorkspaceModel.h - a target's workspace rules as models --*- C++ -*-===//
//
// Each target states its kernels' workspaces as external models of its
// workspace interface (CPUWorkspaceOpInterface, CUDAWorkspaceOpInterface in
// titan/Dialect/Titan/IR/KernelInterface.td): one rule per op, a function of
// the op. This header has the model, the shape helpers the targets' rules
// share, and the collectives' staging, which both targets' communicators
// (runtime/lib/MPICommunicator.cpp, NCCLCommunicator.cpp) lay out alike.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TARGET_WORKSPACEMODEL_H
#define TITAN_TARGET_WORKSPACEMODEL_H

#include "titan/Dialect/Dist/IR/Dist.h"

namespace titan::target {

/// The external model of `Interface` (a target's workspace interface) for
/// `Op` whose rule is `Rule`.
template <typename Interface, typename Op, int64_t (*Rule)(Op)>
struct WorkspaceModel
    : Interface::template ExternalModel<WorkspaceModel<Interface, Op, Rule>,
                                        Op> {
  int64_t getWorkspaceBytes(mlir::Operation *op) const {
    return Rule(llvm::cast<Op>(op));
  }
};

/// Attaches `Rule` to `Op` as the workspace rule of `Interface`'s target.
template <typename Interface, typename Op, int64_t (*Rule)(Op)>
void attachWorkspaceRule(mlir::MLIRContext *context) {
  Op::template attachInterface<WorkspaceModel<Interface, Op, Rule>>(*context);
}

/// Rows of a tensor: the elements before its last dimension.
int64_t rowsOf(mlir::Value v);
/// Elements of a tensor.
int64_t elementsOf(mlir::Value v);
/// Bytes of a copy of `v` with `elementBytes` per element, rounded up to 64.
int64_t copyBytes(mlir::Value v, int64_t elementBytes);

/// The communicators' staging: a gather or scatter along an inner
/// dimension, or of padded (uneven) shards, goes through a rank-major copy
/// of the data; an all-to-all packs its parts and receives them apart. The
/// other collectives need none.
int64_t allGatherStagingBytes(dist::AllGatherStartOp op);
int64_t reduceScatterStagingBytes(dist::ReduceScatterStartOp op);
int64_t allToAllStagingBytes(dist::AllToAllStartOp op);

/// Attaches the collectives' staging as `Interface`'s rules.
template <typename Interface>
void attachCollectiveWorkspaceRules(mlir::MLIRContext *context) {
  attachWorkspaceRule<Interface, dist::AllGatherStartOp, allGatherStagingBytes>(
      context);
  attachWorkspaceRule<Interface, dist::ReduceScatterStartOp,
                      reduceScatterStagingBytes>(context);
  attachWorkspaceRule<Interface, dist::AllToAllStartOp, allToAllStagingBytes>(
      context);
}

} // namespace titan::target

#endif // TITAN_TARGET_WORKSPACEMODEL_H
