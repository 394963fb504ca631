//===- CollectiveOverlap.h - moving kernels without exposing collectives --===//
//
// The fusions move a kernel down to join another. Moved past the wait of a
// collective that started before it, the kernel no longer overlaps that
// collective: when it was the only compute between the start and the
// wait, the move exposes the collective (a sequence-parallel tp gather, a
// context-parallel reduce-scatter of dv).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_KERNEL_TRANSFORMS_COLLECTIVEOVERLAP_H
#define TITAN_DIALECT_KERNEL_TRANSFORMS_COLLECTIVEOVERLAP_H

#include "titan/Dialect/Kernel/IR/Kernel.h"

namespace titan::kernel {

/// Whether `op` runs nothing on its stream: an allocation, a view, a
/// collective's start or wait.
bool runsNothing(mlir::Operation *op);

/// Whether `moved` may move down past `waits` (ops after it in its block)
/// without leaving a collective it overlapped with nothing to overlap: each
/// collective started before `moved` keeps a compute op other than `moved`
/// between its start and `moved`.
bool keepsOverlap(mlir::Operation *moved, llvm::ArrayRef<WaitOp> waits);

} // namespace titan::kernel

#endif // TITAN_DIALECT_KERNEL_TRANSFORMS_COLLECTIVEOVERLAP_H
