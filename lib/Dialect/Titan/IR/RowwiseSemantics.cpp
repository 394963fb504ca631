//===- RowwiseSemantics.cpp - row ops' scalar bodies ----------------------===//
//
// One element of each row op, in arith/math and row sums: the only
// definition of what these ops compute that the generated kernels follow.
// The formulas are those of the ops' descriptions (TitanOps.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/PointwiseInterface.h"
#include "titan/Dialect/Titan/IR/RowwiseInterface.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace titan;

#include "titan/Dialect/Titan/IR/RowwiseInterface.cpp.inc"

const RowwiseOpInterface::Concept *
titan::lookupRowwiseSemantics(MLIRContext *ctx, StringRef name) {
  std::optional<RegisteredOperationName> op =
      RegisteredOperationName::lookup(name, ctx);
  return op ? op->getInterface<RowwiseOpInterface>() : nullptr;
}

namespace {
/// 1 / sqrt(sum(x * x) / C + eps) over x's row of C (`row.sum`), in x's
/// type: the forward's and the backward's one definition of r.
Value inverseRms(OpBuilder &b, Location loc, Value x, FloatAttr eps,
                 int64_t rowLength, const RowBuilders &row) {
  auto constant = [&](double v) {
    return buildFloatConstantLike(b, loc, x, v);
  };
  Value sum = row.sum(arith::MulFOp::create(b, loc, x, x));
  Value mean = arith::DivFOp::create(b, loc, sum, constant(double(rowLength)));
  Value rms = math::SqrtOp::create(
      b, loc,
      arith::AddFOp::create(b, loc, mean, constant(eps.getValueAsDouble())));
  return arith::DivFOp::create(b, loc, constant(1.0), rms);
}
} // namespace

/// (x, weight) -> x * (1 / sqrt(sum(x * x) / C + eps)) * weight, in the
/// computation type and rounded once (as the GPU library kernel and
/// PyTorch's fused CUDA rms_norm do). 1 / sqrt is correctly rounded on
/// every target (not an approximate rsqrt), so the host and the GPU differ
/// only in the order of the row's sum.
SmallVector<Value> RMSNormOp::buildRowScalar(OpBuilder &b, Location loc,
                                             ValueRange operands,
                                             ArrayRef<Attribute> params,
                                             int64_t rowLength,
                                             const RowBuilders &row) {
  auto eps = params.empty() ? FloatAttr() : dyn_cast<FloatAttr>(params[0]);
  if (operands.size() != 2 || !eps || rowLength <= 0)
    return {};
  Value x = operands[0], weight = operands[1];
  Value inverse = inverseRms(b, loc, x, eps, rowLength, row);
  Value normalized = arith::MulFOp::create(b, loc, x, inverse);
  return {arith::MulFOp::create(b, loc, normalized, weight)};
}

SmallVector<unsigned> RMSNormOp::getColumnOperands() { return {1}; }

/// (x, weight, dy) -> (dx, the element's addend to dw) for the r =
/// 1 / sqrt(sum(x * x) / C + eps) of the forward (TitanOps.td's formula):
/// dx = r * (dy * w - xhat * sum(dy * w * x) * r / C) with xhat = x * r,
/// and dw sums dy * xhat over the rows (a column sum). Both row sums read
/// elements only, so a row is read once for them and once for dx.
SmallVector<Value> RMSNormGradOp::buildRowScalar(OpBuilder &b, Location loc,
                                                 ValueRange operands,
                                                 ArrayRef<Attribute> params,
                                                 int64_t rowLength,
                                                 const RowBuilders &row) {
  auto eps = params.empty() ? FloatAttr() : dyn_cast<FloatAttr>(params[0]);
  if (operands.size() != 3 || !eps || rowLength <= 0)
    return {};
  Value x = operands[0], weight = operands[1], dy = operands[2];
  Value inverse = inverseRms(b, loc, x, eps, rowLength, row);
  Value columns = buildFloatConstantLike(b, loc, x, double(rowLength));
  Value scaled = arith::MulFOp::create(b, loc, dy, weight);
  Value dot = row.sum(arith::MulFOp::create(b, loc, scaled, x));
  Value xhat = arith::MulFOp::create(b, loc, x, inverse);
  Value projection = arith::DivFOp::create(
      b, loc, arith::MulFOp::create(b, loc, dot, inverse), columns);
  Value dx = arith::MulFOp::create(
      b, loc, inverse,
      arith::SubFOp::create(b, loc, scaled,
                            arith::MulFOp::create(b, loc, xhat, projection)));
  return {dx, arith::MulFOp::create(b, loc, dy, xhat)};
}

SmallVector<unsigned> RMSNormGradOp::getColumnOperands() { return {1}; }
SmallVector<unsigned> RMSNormGradOp::getColumnSumResults() { return {1}; }
