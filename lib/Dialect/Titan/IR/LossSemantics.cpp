//===- LossSemantics.cpp - the loss's scalar bodies -----------------------===//
//
// The cross-entropy's rows (a row op: each row's max, sum of exponentials
// and target logit) and one element of each gradient of the
// cross-entropy's pieces (TitanOps.td's formulas), from the logit at the
// index and its row's label and statistics, read at the row through input
// maps. The generated kernels are the only implementation; a gradient's
// column is the index modulo the row length.
//
// A label outside the row matches no column (the column is unsigned, the
// label signed). The step's labels come from the token file, whose reader
// stops the run at a token outside the vocabulary.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/PointwiseInterface.h"
#include "titan/Dialect/Titan/IR/RowwiseInterface.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace titan;

namespace {
using Reads = SmallVector<std::pair<unsigned, AffineMap>>;

int64_t elementsOf(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// A `... x V` buffer as rows of V columns.
struct Rows {
  int64_t rows, columns;
};

/// The rows of `shape`, when it has elements.
std::optional<Rows> rowsOf(ArrayRef<int64_t> shape) {
  if (shape.empty() || shape.back() < 1 || elementsOf(shape) < 1)
    return std::nullopt;
  return Rows{elementsOf(shape) / shape.back(), shape.back()};
}

AffineMap identity(MLIRContext *ctx) {
  return AffineMap::get(1, 0, getAffineDimExpr(0, ctx));
}

/// The element of a per-row operand (`...`) at the index's row of `... x V`.
AffineMap rowOf(MLIRContext *ctx, int64_t columns) {
  return AffineMap::get(1, 0, getAffineDimExpr(0, ctx).floorDiv(columns));
}

/// Integer `v` (a label, a slice's start) as an i64.
Value toI64(OpBuilder &b, Location loc, Value v) {
  unsigned width = v.getType().getIntOrFloatBitWidth();
  if (width == 64)
    return v;
  if (width < 64)
    return arith::ExtSIOp::create(b, loc, b.getI64Type(), v);
  return arith::TruncIOp::create(b, loc, b.getI64Type(), v);
}

/// Whether the index's column (index mod `columns`) is `target` (an i64; a
/// negative one is no column).
Value isColumn(OpBuilder &b, Location loc, Value index, int64_t columns,
               Value target) {
  Value column = arith::RemUIOp::create(
      b, loc, index,
      arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(columns)));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, column,
                               target);
}

/// The row's logit at `column` (i64), as the row's sum of it and zeros:
/// exact, and NaN logits elsewhere do not reach it. With `mustName`, a
/// column outside [0, C) (an unsigned compare) gives NaN, which stops a run
/// (as the retired CUDA kernels did); otherwise 0 (another slice's).
Value logitAt(OpBuilder &b, Location loc, Value x, Value column,
              int64_t rowLength, const RowBuilders &row, bool mustName) {
  Value at = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                   row.column(), column);
  Value logit = row.sum(arith::SelectOp::create(
      b, loc, at, x, buildFloatConstantLike(b, loc, x, 0.0)));
  if (!mustName)
    return logit;
  Value named = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ult, column,
      arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(rowLength)));
  return arith::SelectOp::create(
      b, loc, named, logit,
      buildFloatConstantLike(b, loc, x,
                             std::numeric_limits<double>::quiet_NaN()));
}
} // namespace

//===----------------------------------------------------------------------===//
// titan.cross_entropy: each row's lse = m + log(sum exp(x - m)), m its max,
// and its loss lse - x[label], whose mean is the result
//===----------------------------------------------------------------------===//

/// (logit, label) -> (the row's loss, the row's lse), in the computation
/// type. The target logit is the row's sum of the logit at the label's
/// column and zeros: exact, and NaN logits elsewhere do not reach it. A
/// label outside [0, V) (checked once a row) makes the loss NaN, as the
/// retired CUDA kernel did; so does an infinite logit (x - max is NaN
/// there), where torch.logsumexp gives an infinity: either stops a run.
SmallVector<Value> CrossEntropyOp::buildRowScalar(OpBuilder &b, Location loc,
                                                  ValueRange operands,
                                                  ArrayRef<Attribute> params,
                                                  int64_t rowLength,
                                                  const RowBuilders &row) {
  if (operands.size() != 2 || !isa<FloatType>(operands[0].getType()) ||
      !operands[1].getType().isSignlessInteger() || rowLength <= 0)
    return {};
  Value x = operands[0];
  // The row's log-sum-exp (one read of the row on a GPU).
  Value lse = row.logSumExp(x);
  Value target = logitAt(b, loc, x, toI64(b, loc, operands[1]), rowLength, row,
                         /*mustName=*/true);
  return {arith::SubFOp::create(b, loc, lse, target), lse};
}

SmallVector<unsigned> CrossEntropyOp::getRowOperands() { return {1}; }
SmallVector<unsigned> CrossEntropyOp::getRowResults() { return {1}; }
SmallVector<unsigned> CrossEntropyOp::getMeanResults() { return {0}; }

//===----------------------------------------------------------------------===//
// Loss parallel's pieces: a shard's row max, sum of exp(x - max) and label
// logit, and the loss from their all-reduced sums
//===----------------------------------------------------------------------===//

SmallVector<Value> RowMaxOp::buildRowScalar(OpBuilder &b, Location loc,
                                            ValueRange operands,
                                            ArrayRef<Attribute>,
                                            int64_t rowLength,
                                            const RowBuilders &row) {
  if (operands.size() != 1 || rowLength <= 0)
    return {};
  return {row.max(operands[0])};
}

SmallVector<unsigned> RowMaxOp::getRowResults() { return {0}; }

/// (logit, the whole row's max) -> the row's sum of exp(logit - max).
SmallVector<Value> SumExpOp::buildRowScalar(OpBuilder &b, Location loc,
                                            ValueRange operands,
                                            ArrayRef<Attribute>,
                                            int64_t rowLength,
                                            const RowBuilders &row) {
  if (operands.size() != 2 || rowLength <= 0)
    return {};
  Value shifted = arith::SubFOp::create(b, loc, operands[0], operands[1]);
  return {row.sum(math::ExpOp::create(b, loc, shifted))};
}

SmallVector<unsigned> SumExpOp::getRowOperands() { return {1}; }
SmallVector<unsigned> SumExpOp::getRowResults() { return {0}; }

/// (logit, label[, the slice's start]) -> the row's logit at the label's
/// column in this slice (the sum of it and zeros), 0 when the label is
/// outside the slice; without a start the label must name a column (NaN
/// otherwise, as the retired CUDA kernel gave).
SmallVector<Value> TargetLogitOp::buildRowScalar(OpBuilder &b, Location loc,
                                                 ValueRange operands,
                                                 ArrayRef<Attribute> params,
                                                 int64_t rowLength,
                                                 const RowBuilders &row) {
  auto hasStart =
      params.size() == 1 ? dyn_cast<IntegerAttr>(params[0]) : IntegerAttr();
  if (!hasStart || rowLength <= 0 ||
      operands.size() != (hasStart.getInt() ? 3u : 2u) ||
      !isa<FloatType>(operands[0].getType()))
    return {};
  Value x = operands[0], label = toI64(b, loc, operands[1]);
  if (operands.size() == 3)
    label = arith::SubIOp::create(b, loc, label, toI64(b, loc, operands[2]));
  return {logitAt(b, loc, x, label, rowLength, row,
                  /*mustName=*/operands.size() == 2)};
}

SmallVector<unsigned> TargetLogitOp::getRowOperands() { return {1}; }
SmallVector<unsigned> TargetLogitOp::getRowResults() { return {0}; }

/// (max, sum_exp, target) of a row -> its loss, max + log(sum_exp) -
/// target, whose mean is the result. Every operand is the row's: the rows
/// are the operands' elements.
SmallVector<Value> CrossEntropyFromStatsOp::buildRowScalar(
    OpBuilder &b, Location loc, ValueRange operands, ArrayRef<Attribute>,
    int64_t rowLength, const RowBuilders &) {
  if (operands.size() != 3 || rowLength <= 0)
    return {};
  Value lse = arith::AddFOp::create(b, loc, operands[0],
                                    math::LogOp::create(b, loc, operands[1]));
  return {arith::SubFOp::create(b, loc, lse, operands[2])};
}

SmallVector<unsigned> CrossEntropyFromStatsOp::getRowOperands() {
  return {0, 1, 2};
}
SmallVector<unsigned> CrossEntropyFromStatsOp::getMeanResults() { return {0}; }

//===----------------------------------------------------------------------===//
// titan.cross_entropy_from_stats_grad: (grad / T) / sum_exp[t], -(grad / T)
//===----------------------------------------------------------------------===//

Reads CrossEntropyFromStatsGradOp::getElementReads(MLIRContext *ctx,
                                                   ArrayRef<Attribute>,
                                                   CallShapes shapes) {
  if (shapes.operands.size() != 2 || elementsOf(shapes.operands[0]) < 1)
    return {};
  return {{0, identity(ctx)}, {1, identity(ctx)}};
}

SmallVector<Value>
CrossEntropyFromStatsGradOp::buildScalar(OpBuilder &, Location, ValueRange,
                                         ArrayRef<Attribute>) {
  return {}; // T is the operands' element count (buildIndexedScalar).
}

SmallVector<Value> CrossEntropyFromStatsGradOp::buildIndexedScalar(
    OpBuilder &b, Location loc, ValueRange reads, Value, ArrayRef<Attribute>,
    CallShapes shapes) {
  if (reads.size() != 2 || shapes.operands.size() != 2)
    return {};
  Value sumExp = reads[0];
  Value scale = arith::DivFOp::create(
      b, loc, reads[1],
      buildFloatConstantLike(b, loc, sumExp,
                             double(elementsOf(shapes.operands[0]))));
  return {arith::DivFOp::create(b, loc, scale, sumExp),
          arith::NegFOp::create(b, loc, scale)};
}

//===----------------------------------------------------------------------===//
// titan.cross_entropy_grad: grad / T * (exp(x - lse[t]) - onehot)
//===----------------------------------------------------------------------===//

Reads CrossEntropyGradOp::getElementReads(MLIRContext *ctx, ArrayRef<Attribute>,
                                          CallShapes shapes) {
  if (shapes.operands.size() != 4 || !rowsOf(shapes.operands[0]))
    return {};
  AffineMap row = rowOf(ctx, shapes.operands[0].back());
  return {{0, identity(ctx)}, {1, row}, {2, row}, {3, identity(ctx)}};
}

SmallVector<Value> CrossEntropyGradOp::buildScalar(OpBuilder &, Location,
                                                   ValueRange,
                                                   ArrayRef<Attribute>) {
  return {}; // The label's column needs the index (buildIndexedScalar).
}

SmallVector<Value>
CrossEntropyGradOp::buildIndexedScalar(OpBuilder &b, Location loc,
                                       ValueRange reads, Value index,
                                       ArrayRef<Attribute>, CallShapes shapes) {
  std::optional<Rows> logits = rowsOf(shapes.operands[0]);
  if (reads.size() != 4 || !logits)
    return {};
  Value x = reads[0], label = reads[1], lse = reads[2], grad = reads[3];
  // grad / T is the same at every index: computed once.
  Value scale = arith::DivFOp::create(
      b, loc, grad, buildFloatConstantLike(b, loc, grad, double(logits->rows)));
  Value softmax =
      math::ExpOp::create(b, loc, arith::SubFOp::create(b, loc, x, lse));
  Value onehot = arith::SelectOp::create(
      b, loc, isColumn(b, loc, index, logits->columns, toI64(b, loc, label)),
      buildFloatConstantLike(b, loc, x, 1.0),
      buildFloatConstantLike(b, loc, x, 0.0));
  return {arith::MulFOp::create(
      b, loc, scale, arith::SubFOp::create(b, loc, softmax, onehot))};
}

//===----------------------------------------------------------------------===//
// titan.sum_exp_grad: grad[t] * exp(x - max[t])
//===----------------------------------------------------------------------===//

Reads SumExpGradOp::getElementReads(MLIRContext *ctx, ArrayRef<Attribute>,
                                    CallShapes shapes) {
  if (shapes.operands.size() != 3 || !rowsOf(shapes.operands[0]))
    return {};
  AffineMap row = rowOf(ctx, shapes.operands[0].back());
  return {{0, identity(ctx)}, {1, row}, {2, row}};
}

SmallVector<Value> SumExpGradOp::buildScalar(OpBuilder &, Location, ValueRange,
                                             ArrayRef<Attribute>) {
  return {}; // The row's max and gradient come through maps.
}

SmallVector<Value> SumExpGradOp::buildIndexedScalar(OpBuilder &b, Location loc,
                                                    ValueRange reads, Value,
                                                    ArrayRef<Attribute>,
                                                    CallShapes) {
  if (reads.size() != 3)
    return {};
  Value shifted = arith::SubFOp::create(b, loc, reads[0], reads[1]);
  return {arith::MulFOp::create(b, loc, reads[2],
                                math::ExpOp::create(b, loc, shifted))};
}

//===----------------------------------------------------------------------===//
// titan.target_logit_grad: grad[t] at column labels[t] - vocab_start, else 0
//===----------------------------------------------------------------------===//

Reads TargetLogitGradOp::getElementReads(MLIRContext *ctx,
                                         ArrayRef<Attribute> params,
                                         CallShapes shapes) {
  if (params.size() != 1 || shapes.results.size() != 1 ||
      !rowsOf(shapes.results[0]))
    return {};
  bool hasStart = cast<IntegerAttr>(params[0]).getInt() != 0;
  if (shapes.operands.size() != (hasStart ? 3u : 2u))
    return {};
  AffineMap row = rowOf(ctx, shapes.results[0].back());
  Reads reads = {{0, row}, {1, row}};
  if (hasStart)
    reads.push_back({2, identity(ctx)});
  return reads;
}

SmallVector<Value> TargetLogitGradOp::buildScalar(OpBuilder &, Location,
                                                  ValueRange,
                                                  ArrayRef<Attribute>) {
  return {}; // The label's column needs the index (buildIndexedScalar).
}

SmallVector<Value>
TargetLogitGradOp::buildIndexedScalar(OpBuilder &b, Location loc,
                                      ValueRange reads, Value index,
                                      ArrayRef<Attribute>, CallShapes shapes) {
  if (reads.size() < 2 || reads.size() > 3 || shapes.results.size() != 1 ||
      !rowsOf(shapes.results[0]))
    return {};
  Value grad = reads[0], target = toI64(b, loc, reads[1]);
  // The label's column in this vocabulary slice (none when outside it: the
  // column never equals a negative or too large target).
  if (reads.size() == 3)
    target = arith::SubIOp::create(b, loc, target, toI64(b, loc, reads[2]));
  Value hit = isColumn(b, loc, index, shapes.results[0].back(), target);
  return {arith::SelectOp::create(b, loc, hit, grad,
                                  buildFloatConstantLike(b, loc, grad, 0.0))};
}
