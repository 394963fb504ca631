//===- KernelContracts.cpp - the dist ops' kernel contracts ---------------===//
//
// Collectives run as one nonblocking call each, with the parameters their
// entries in titan/Kernel/KernelCatalog.def name.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringSwitch.h"

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
  int64_t reduction = llvm::StringSwitch<int64_t>(getReduction())
                          .Case("avg", 1)
                          .Case("max", 2)
                          .Default(0);
  return collectiveParams(*this, 0, reduction, getAxes());
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

// The communicators' staging (runtime/lib/MPICommunicator.cpp and
// NCCLCommunicator.cpp): a gather or scatter along an inner dimension, or of
// padded (uneven) shards, goes through a rank-major copy of the data; an
// all-to-all packs its parts and receives them apart.
namespace {
int64_t bytesOf(RankedTensorType t) {
  return t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
}
int64_t outerElements(RankedTensorType t, int64_t dim) {
  int64_t outer = 1;
  for (int64_t d = 0; d < dim; ++d)
    outer *= t.getDimSize(d);
  return outer;
}
} // namespace

int64_t AllGatherStartOp::getWorkspaceBytes(titan::KernelTarget) {
  auto in = getInput().getType();
  auto out = getFuture().getType().getValueType();
  int64_t parts = getGroupSize(getMesh(*this), getAxes()), dim = getDim();
  bool staged = outerElements(in, dim) > 1 ||
                out.getDimSize(dim) != parts * in.getDimSize(dim);
  return staged ? parts * bytesOf(in) : 0;
}
int64_t ReduceScatterStartOp::getWorkspaceBytes(titan::KernelTarget) {
  auto in = getInput().getType();
  int64_t parts = getGroupSize(getMesh(*this), getAxes()), dim = getDim();
  int64_t rows = (in.getDimSize(dim) + parts - 1) / parts;
  bool staged =
      outerElements(in, dim) > 1 || rows * parts != in.getDimSize(dim);
  return staged ? bytesOf(in) / in.getDimSize(dim) * rows * parts : 0;
}
int64_t AllToAllStartOp::getWorkspaceBytes(titan::KernelTarget) {
  return 2 * bytesOf(getInput().getType());
}
int64_t AllReduceStartOp::getWorkspaceBytes(titan::KernelTarget) { return 0; }
int64_t BroadcastStartOp::getWorkspaceBytes(titan::KernelTarget) { return 0; }
int64_t SendRecvStartOp::getWorkspaceBytes(titan::KernelTarget) { return 0; }

ArrayAttr ShardOffsetOp::getKernelParams() {
  Builder b(getContext());
  SmallVector<Attribute> params = {b.getI64IntegerAttr(int64_t(getStride())),
                                   b.getI64IntegerAttr(getAxes().size())};
  for (Attribute axis : getAxes())
    params.push_back(b.getI64IntegerAttr(
        MeshAttr::getAxisIndex(cast<StringAttr>(axis).getValue())));
  return b.getArrayAttr(params);
}
