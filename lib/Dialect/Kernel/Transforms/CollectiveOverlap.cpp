//===- CollectiveOverlap.cpp - moving kernels without exposing collectives ===//

#include "titan/Dialect/Kernel/Transforms/CollectiveOverlap.h"

using namespace mlir;
using namespace titan::kernel;

bool titan::kernel::runsNothing(Operation *op) {
  return isa<AllocOp, ViewOp, CollectiveStartOp, CopyStartOp, WaitOp>(op);
}

bool titan::kernel::keepsOverlap(Operation *moved, ArrayRef<WaitOp> waits) {
  for (WaitOp wait : waits) {
    CollectiveStartOp start = wait.getStart();
    if (!start || start->getBlock() != moved->getBlock() ||
        !start->isBeforeInBlock(moved))
      continue;
    bool computes = false;
    for (Operation *op = start->getNextNode(); op && op != moved;
         op = op->getNextNode())
      computes |= !runsNothing(op);
    if (!computes)
      return false;
  }
  return true;
}
