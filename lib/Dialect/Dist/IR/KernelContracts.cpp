//===- KernelContracts.cpp - the dist ops' kernel contracts ---------------===//
//
// Collectives run as one nonblocking call each, with the parameters their
// entries in titan/Kernel/KernelCatalog.def name; their staging workspaces
// are the targets' (lib/Target/WorkspaceModel.cpp).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace titan::dist;

namespace {
int64_t axisMask(ArrayAttr axes) {
  int64_t mask = 0;
  for (Attribute axis : axes)
    mask |=
        int64_t(1) << MeshAttr::getAxisIndex(cast<StringAttr>(axis).getValue());
  return mask;
}

ArrayAttr collectiveParams(Operation *op, int64_t a, int64_t b,
                           ArrayAttr axes) {
  Builder builder(op->getContext());
  return builder.getArrayAttr({builder.getI64IntegerAttr(a),
                               builder.getI64IntegerAttr(b),
                               builder.getI64IntegerAttr(axisMask(axes))});
}
} // namespace

ArrayAttr AllGatherStartOp::getKernelParams() {
  return collectiveParams(*this, getDim(), 0, getAxes());
}
ArrayAttr ReduceScatterStartOp::getKernelParams() {
  return collectiveParams(*this, getDim(), 0, getAxes());
}
ArrayAttr AllReduceStartOp::getKernelParams() {
  return collectiveParams(*this, 0, int64_t(getReduction()), getAxes());
}
ArrayAttr AllToAllStartOp::getKernelParams() {
  return collectiveParams(*this, getSplitDim(), getConcatDim(), getAxes());
}
ArrayAttr BroadcastStartOp::getKernelParams() {
  return collectiveParams(*this, int64_t(getRoot()), 0, getAxes());
}
ArrayAttr SendRecvStartOp::getKernelParams() {
  return collectiveParams(*this, int64_t(getShift()), 0, getAxes());
}

ArrayAttr ShardOffsetOp::getKernelParams() {
  Builder b(getContext());
  SmallVector<Attribute> params = {b.getI64IntegerAttr(int64_t(getStride())),
                                   b.getI64IntegerAttr(getAxes().size())};
  for (Attribute axis : getAxes())
    params.push_back(b.getI64IntegerAttr(
        MeshAttr::getAxisIndex(cast<StringAttr>(axis).getValue())));
  return b.getArrayAttr(params);
}
