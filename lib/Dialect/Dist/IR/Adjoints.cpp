//===- Adjoints.cpp - reverse-mode rules of the dist ops ------------------===//
//
// Every rank's loss is seeded with 1/ranks (titan-autodiff), so each
// collective's adjoint is its exact transpose: all_gather <-> reduce_scatter
// over the same axes and dimension, all_reduce -> the same all_reduce,
// all_to_all and send_recv reversed, replicate -> all_reduce (sum).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

using namespace mlir;
using namespace titan;
using namespace titan::dist;

// The collective's rule is on its start op, with the waited value's
// gradient.
LogicalResult WaitOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                   AdjointContext &ctx) {
  Operation *start = getFuture().getDefiningOp();
  auto rule = dyn_cast_or_null<AdjointOpInterface>(start);
  if (!rule)
    return emitOpError() << "waits on an op with no adjoint rule";
  return rule.buildAdjoint(b, dy, ctx);
}

LogicalResult AllGatherStartOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                             AdjointContext &ctx) {
  ctx.addGradient(getInput(), createCollective<ReduceScatterStartOp>(
                                  b, getLoc(), tensorTypeOf(getInput()), dy[0],
                                  getAxesAttr(), getDimAttr()));
  return success();
}

LogicalResult ReduceScatterStartOp::buildAdjoint(OpBuilder &b,
                                                 ArrayRef<Value> dy,
                                                 AdjointContext &ctx) {
  ctx.addGradient(getInput(), createCollective<AllGatherStartOp>(
                                  b, getLoc(), tensorTypeOf(getInput()), dy[0],
                                  getAxesAttr(), getDimAttr()));
  return success();
}

// The transpose of an all-reduce is the same all-reduce of the gradient. A
// gradient known to be equal on every rank of the group needs no
// communication: its mean is itself and its sum is the group size times it
// (the loss seed; loss parallel's statistics, whose gradients derive from
// all-reduced values).
LogicalResult AllReduceStartOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                             AdjointContext &ctx) {
  if (getReduction() == ReductionKind::Max)
    return emitOpError() << "(max) has no gradient";
  Location loc = getLoc();
  Value g = dy[0];
  if (!ctx.isUniformOver(g, getAxes())) {
    ctx.addGradient(getInput(), createCollective<AllReduceStartOp>(
                                    b, loc, tensorTypeOf(g), g, getAxesAttr(),
                                    getReductionAttr()));
    return success();
  }
  if (getReduction() == ReductionKind::Avg) {
    ctx.addGradient(getInput(), g);
    return success();
  }
  double n = double(getGroupSize(getMesh(*this), getAxes()));
  if (auto fill = g.getDefiningOp<FillOp>()) {
    ctx.addGradient(getInput(),
                    FillOp::create(b, loc, g.getType(),
                                   b.getF64FloatAttr(
                                       fill.getValue().convertToDouble() * n)));
    return success();
  }
  ctx.addGradient(
      getInput(),
      MulOp::create(b, loc, g,
                    FillOp::create(b, loc, g.getType(), b.getF64FloatAttr(n))));
  return success();
}

LogicalResult AllToAllStartOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                            AdjointContext &ctx) {
  ctx.addGradient(getInput(),
                  createCollective<AllToAllStartOp>(
                      b, getLoc(), tensorTypeOf(getInput()), dy[0],
                      getAxesAttr(), getConcatDimAttr(), getSplitDimAttr()));
  return success();
}

LogicalResult SendRecvStartOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                            AdjointContext &ctx) {
  ctx.addGradient(getInput(), createCollective<SendRecvStartOp>(
                                  b, getLoc(), tensorTypeOf(getInput()), dy[0],
                                  getAxesAttr(),
                                  b.getI64IntegerAttr(-int64_t(getShift()))));
  return success();
}

LogicalResult BroadcastStartOp::buildAdjoint(OpBuilder &, ArrayRef<Value>,
                                             AdjointContext &) {
  return emitOpError() << "has no adjoint rule (a broadcast's transpose is a "
                          "reduce to its root, which dist does not have)";
}

// Replicated use: the gradient is summed over the replicas.
LogicalResult ReplicateOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                        AdjointContext &ctx) {
  ctx.addGradient(getInput(), createCollective<AllReduceStartOp>(
                                  b, getLoc(), getType(), dy[0], getAxesAttr(),
                                  ReductionKind::Sum));
  return success();
}

// The gradient of a replicated value is every rank's gradient of its own
// part: gathered.
LogicalResult LocalShardOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                         AdjointContext &ctx) {
  if (getMesh(*this).getSplitLayout(getAxes()).loadBalanced)
    return emitOpError() << "has no adjoint over load-balanced axes "
                         << getAxes()
                         << " (its gather would need the chunks reordered)";
  ctx.addGradient(getInput(), createCollective<AllGatherStartOp>(
                                  b, getLoc(), tensorTypeOf(getInput()), dy[0],
                                  getAxesAttr(), getDimAttr()));
  return success();
}

LogicalResult RingAttentionOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                            AdjointContext &ctx) {
  if (!dy[0])
    return success();
  auto grad = RingAttentionGradOp::create(
      b, getLoc(), getQuery().getType(), getKey().getType(),
      getValue().getType(), getQuery(), getKey(), getValue(), getResult(),
      getLse(), dy[0], getDocumentStarts(), getAxesAttr(), getRotateAttr(),
      getScaleAttr());
  ctx.addGradient(getQuery(), grad.getQueryGrad());
  ctx.addGradient(getKey(), grad.getKeyGrad());
  ctx.addGradient(getValue(), grad.getValueGrad());
  return success();
}
