//===- Adjoints.cpp - reverse-mode rules of the titan ops -----------------===//
//
// AdjointOpInterface for the titan forward ops: each rule builds the
// gradients of its operands from those of its results (see the ops' ODS
// descriptions for the gradient ops' numerics).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/TitanOps.h"

using namespace mlir;
using namespace titan;

#include "titan/Dialect/Titan/IR/AdjointInterface.cpp.inc"

LogicalResult EmbeddingOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                        AdjointContext &ctx) {
  ctx.addGradient(getWeight(),
                  EmbeddingGradOp::create(b, getLoc(), getWeight().getType(),
                                          dy[0], getTokens(), getVocabStart()));
  return success();
}

LogicalResult RMSNormOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                      AdjointContext &ctx) {
  auto g = RMSNormGradOp::create(
      b, getLoc(), getInput().getType(), getWeight().getType(), getInput(),
      ctx.forwardValue(getWeight()), dy[0], getEpsAttr());
  ctx.addGradient(getInput(), g.getInputGrad());
  ctx.addGradient(getWeight(), g.getWeightGrad());
  return success();
}

// A rotation's adjoint is the inverse rotation.
LogicalResult RopeOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                   AdjointContext &ctx) {
  ctx.addGradient(getInput(), RopeOp::create(b, getLoc(), getType(), dy[0],
                                             getFreqsCis(), !getTranspose()));
  return success();
}

// The cos/sin table is a constant of the step.
LogicalResult RopeAnglesOp::buildAdjoint(OpBuilder &, ArrayRef<Value>,
                                         AdjointContext &) {
  return success();
}
LogicalResult FillOp::buildAdjoint(OpBuilder &, ArrayRef<Value>,
                                   AdjointContext &) {
  return success();
}

LogicalResult AttentionOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                        AdjointContext &ctx) {
  // The log-sum-exp is a statistic for the backward, not differentiated.
  auto g = AttentionGradOp::create(
      b, getLoc(), getQuery().getType(), getKey().getType(),
      getValue().getType(), getQuery(), getKey(), getValue(), getResult(),
      getLse(), dy[0], getDocumentStarts(), getScaleAttr());
  ctx.addGradient(getQuery(), g.getQueryGrad());
  ctx.addGradient(getKey(), g.getKeyGrad());
  ctx.addGradient(getValue(), g.getValueGrad());
  return success();
}

LogicalResult LinearOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                     AdjointContext &ctx) {
  ctx.addGradient(getInput(), LinearGradInputOp::create(
                                  b, getLoc(), getInput().getType(), dy[0],
                                  ctx.forwardValue(getWeight())));
  ctx.addGradient(getWeight(),
                  LinearGradWeightOp::create(b, getLoc(), getWeight().getType(),
                                             dy[0], getInput()));
  return success();
}

// torchao's Float8Linear backward: both gradient GEMMs under the same
// recipe, reading the high-precision input and weight. Split dimensions
// carry over: dY is split like the result, dX like the input, dW like the
// weight.
LogicalResult Float8LinearOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                           AdjointContext &ctx) {
  DenseI64ArrayAttr gradInputSplit, gradWeightSplit;
  if (std::optional<ArrayRef<int64_t>> split = getSplitDims()) {
    ArrayRef<int64_t> d = *split; // input, weight, result
    gradInputSplit = b.getDenseI64ArrayAttr({d[2], d[1], d[0]});
    gradWeightSplit = b.getDenseI64ArrayAttr({d[2], d[0], d[1]});
  }
  ctx.addGradient(getInput(),
                  Float8LinearGradInputOp::create(
                      b, getLoc(), getInput().getType(), dy[0],
                      ctx.forwardValue(getWeight()), getRecipeAttr(),
                      gradInputSplit, getSplitAxesAttr()));
  ctx.addGradient(getWeight(),
                  Float8LinearGradWeightOp::create(
                      b, getLoc(), getWeight().getType(), dy[0], getInput(),
                      getRecipeAttr(), gradWeightSplit, getSplitAxesAttr()));
  return success();
}

LogicalResult SwiGLUOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                     AdjointContext &ctx) {
  auto g = SwiGLUGradOp::create(b, getLoc(), getType(), getType(), getGate(),
                                getUp(), dy[0]);
  ctx.addGradient(getGate(), g.getGateGrad());
  ctx.addGradient(getUp(), g.getUpGrad());
  return success();
}

LogicalResult SiLUOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                   AdjointContext &ctx) {
  ctx.addGradient(getInput(), SiLUGradOp::create(b, getLoc(), getType(),
                                                 getInput(), dy[0]));
  return success();
}

LogicalResult MulOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                  AdjointContext &ctx) {
  ctx.addGradient(getLhs(), MulOp::create(b, getLoc(), dy[0], getRhs()));
  ctx.addGradient(getRhs(), MulOp::create(b, getLoc(), dy[0], getLhs()));
  return success();
}

LogicalResult AddOp::buildAdjoint(OpBuilder &, ArrayRef<Value> dy,
                                  AdjointContext &ctx) {
  ctx.addGradient(getLhs(), dy[0]);
  ctx.addGradient(getRhs(), dy[0]);
  return success();
}

LogicalResult ReshapeOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                      AdjointContext &ctx) {
  ctx.addGradient(getInput(),
                  ReshapeOp::create(b, getLoc(), getInput().getType(), dy[0]));
  return success();
}

LogicalResult SliceOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                    AdjointContext &ctx) {
  ctx.addGradient(getInput(),
                  SliceGradOp::create(b, getLoc(), getInput().getType(), dy[0],
                                      getOffsetsAttr()));
  return success();
}

// Each input's gradient is its box of the result's.
LogicalResult ConcatOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                     AdjointContext &ctx) {
  auto rank = cast<RankedTensorType>(getType()).getRank();
  SmallVector<int64_t> offsets(rank, 0);
  for (Value input : getInputs()) {
    ctx.addGradient(input, SliceOp::create(b, getLoc(), input.getType(), dy[0],
                                           b.getDenseI64ArrayAttr(offsets)));
    offsets[getDim()] +=
        cast<RankedTensorType>(input.getType()).getDimSize(getDim());
  }
  return success();
}

LogicalResult CrossEntropyOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                           AdjointContext &ctx) {
  // The log-sum-exp is a statistic for the backward, not differentiated.
  ctx.addGradient(getLogits(), CrossEntropyGradOp::create(
                                   b, getLoc(), getLogits().getType(),
                                   getLogits(), getLabels(), getLse(), dy[0]));
  return success();
}

LogicalResult SumExpOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                     AdjointContext &ctx) {
  ctx.addGradient(getLogits(),
                  SumExpGradOp::create(b, getLoc(), getLogits().getType(),
                                       getLogits(), getMax(), dy[0]));
  return success();
}

LogicalResult TargetLogitOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                          AdjointContext &ctx) {
  ctx.addGradient(getLogits(), TargetLogitGradOp::create(
                                   b, getLoc(), getLogits().getType(), dy[0],
                                   getLabels(), getVocabStart()));
  return success();
}

// The max is a shift the loss does not depend on: no gradient.
LogicalResult CrossEntropyFromStatsOp::buildAdjoint(OpBuilder &b,
                                                    ArrayRef<Value> dy,
                                                    AdjointContext &ctx) {
  auto g = CrossEntropyFromStatsGradOp::create(
      b, getLoc(), getSumExp().getType(), getTarget().getType(), getSumExp(),
      dy[0]);
  ctx.addGradient(getSumExp(), g.getSumExpGrad());
  ctx.addGradient(getTarget(), g.getTargetGrad());
  return success();
}

LogicalResult RowMaxOp::buildAdjoint(OpBuilder &, ArrayRef<Value>,
                                     AdjointContext &) {
  return emitOpError() << "has no gradient: its result is a shift that the "
                          "loss must not depend on";
}

// The gradient goes back to the input's type (a bf16 parameter copy's
// gradient becomes the fp32 master weight's).
LogicalResult CastOp::buildAdjoint(OpBuilder &b, ArrayRef<Value> dy,
                                   AdjointContext &ctx) {
  ctx.addGradient(getInput(),
                  CastOp::create(b, getLoc(), getInput().getType(), dy[0]));
  return success();
}
