//===- KernelContracts.cpp - the dist ops' kernel contracts ---------------===//
//
// Collectives run as one nonblocking call each, with the parameters their
// entries in titan/Contract/KernelCatalog.def name; their staging workspaces
// are the target backends' (lib/Target/CommonWorkspaces.cpp).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/Dtype.h"

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

/// `leading`, then the number of `axes` and their indices (outermost
/// first): the kernels that find this rank's place in a group.
static ArrayAttr withAxisIndices(Builder &b, ArrayRef<Attribute> leading,
                                 ArrayAttr axes) {
  SmallVector<Attribute> params(leading);
  params.push_back(b.getI64IntegerAttr(axes.size()));
  for (Attribute axis : axes)
    params.push_back(b.getI64IntegerAttr(
        MeshAttr::getAxisIndex(cast<StringAttr>(axis).getValue())));
  return b.getArrayAttr(params);
}

ArrayAttr ShardOffsetOp::getKernelParams() {
  Builder b(getContext());
  return withAxisIndices(b, {b.getI64IntegerAttr(int64_t(getStride()))},
                         getAxes());
}

/// Whether the mesh splits over `axes` load-balanced: the kernels'
/// load_balanced parameter.
static int64_t loadBalanced(Operation *op, ArrayAttr axes) {
  return getMesh(op).getSplitLayout(axes).loadBalanced ? 1 : 0;
}

ArrayAttr LocalShardOp::getKernelParams() {
  Builder b(getContext());
  return withAxisIndices(b,
                         {b.getI64IntegerAttr(int64_t(getDim())),
                          b.getI64IntegerAttr(loadBalanced(*this, getAxes()))},
                         getAxes());
}

/// {scale, flags..., degree, kv_shift, load_balanced, axes}: the
/// context-attention kernels' parameters (the backward's flag:
/// deterministic).
static ArrayAttr contextAttentionParams(Operation *op, ArrayAttr axes,
                                        int64_t kvShift, FloatAttr scale,
                                        ArrayRef<int64_t> flags = {}) {
  Builder b(op->getContext());
  SmallVector<Attribute> leading{b.getF64FloatAttr(scale.getValueAsDouble())};
  for (int64_t flag : flags)
    leading.push_back(b.getI64IntegerAttr(flag));
  leading.push_back(b.getI64IntegerAttr(getGroupSize(getMesh(op), axes)));
  leading.push_back(b.getI64IntegerAttr(kvShift));
  leading.push_back(b.getI64IntegerAttr(loadBalanced(op, axes)));
  return withAxisIndices(b, leading, axes);
}

ArrayAttr ContextAttentionOp::getKernelParams() {
  return contextAttentionParams(*this, getAxes(), getKvShift(), getScaleAttr());
}

ArrayAttr ContextAttentionGradOp::getKernelParams() {
  return contextAttentionParams(*this, getAxes(), getKvShift(), getScaleAttr(),
                                {getDeterministic() ? 1 : 0});
}

/// {count, dim, grad_input, axis_mask}: the collective matmuls' parameters
/// (the counted buffers: one weight per output, or one (lhs, weight) pair
/// per GEMM).
static ArrayAttr collectiveMatmulParams(Operation *op, int64_t count,
                                        int64_t dim, bool gradInput,
                                        ArrayAttr axes) {
  Builder b(op->getContext());
  return b.getArrayAttr({b.getI64IntegerAttr(count), b.getI64IntegerAttr(dim),
                         b.getI64IntegerAttr(gradInput ? 1 : 0),
                         b.getI64IntegerAttr(axisMask(axes))});
}

namespace {
/// The catalog's code of a float8 tensor's format (Dtype.h).
int64_t float8Code(Value v) {
  return titan::float8FormatCode(
      cast<ShapedType>(v.getType()).getElementType());
}

/// Float8's collective matmuls: the ring's four, the storage type's code
/// (reduce-scatter only), then the formats and whether the weights come
/// K-major (catalog).
ArrayAttr scaledRingParams(ArrayAttr ring, std::optional<int64_t> storage,
                           Value lhs, Value weight, bool rhsTransposed) {
  Builder b(ring.getContext());
  SmallVector<Attribute> all(ring.getValue());
  if (storage)
    all.push_back(b.getI64IntegerAttr(*storage));
  all.push_back(b.getI64IntegerAttr(float8Code(lhs)));
  all.push_back(b.getI64IntegerAttr(float8Code(weight)));
  all.push_back(b.getI64IntegerAttr(rhsTransposed ? 1 : 0));
  return b.getArrayAttr(all);
}

int64_t storageCode(Type t) {
  Type element = cast<ShapedType>(t).getElementType();
  return element.isBF16() ? 1 : element.isF16() ? 2 : 0;
}
} // namespace

ArrayAttr AllGatherLinearOp::getKernelParams() {
  return collectiveMatmulParams(*this, getWeights().size(), getDim(),
                                getGradInput(), getAxes());
}

ArrayAttr LinearReduceScatterOp::getKernelParams() {
  ArrayAttr params = collectiveMatmulParams(*this, getNumGemms(), getDim(),
                                            getGradInput(), getAxes());
  // The storage type the partial sums are rounded to (catalog).
  SmallVector<Attribute> all(params.getValue());
  all.push_back(Builder(getContext())
                    .getI64IntegerAttr(storageCode(getResult().getType())));
  return ArrayAttr::get(getContext(), all);
}

ArrayAttr AllGatherScaledMatmulOp::getKernelParams() {
  return scaledRingParams(collectiveMatmulParams(*this, getNumGemms(), getDim(),
                                                 getGradInput(), getAxes()),
                          std::nullopt, getInput(), getWeight(0),
                          getRhsTransposed());
}

ArrayAttr ScaledMatmulReduceScatterOp::getKernelParams() {
  return scaledRingParams(collectiveMatmulParams(*this, getNumGemms(), getDim(),
                                                 getGradInput(), getAxes()),
                          storageCode(getResult().getType()), getLhs(0),
                          getWeight(0), getRhsTransposed());
}
