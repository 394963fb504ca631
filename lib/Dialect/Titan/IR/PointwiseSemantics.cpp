//===- PointwiseSemantics.cpp - pointwise ops' scalar bodies --------------===//
//
// One element of each pointwise op, in arith/math: the only definition of
// what these ops compute that the generated kernels follow. The formulas
// are those of the ops' descriptions (TitanOps.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/PointwiseInterface.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

using namespace mlir;
using namespace titan;

#include "titan/Dialect/Titan/IR/PointwiseInterface.cpp.inc"

std::optional<FloatType> titan::pointwiseComputeType(TypeRange types) {
  bool f64 = false, sixteen = false;
  for (Type t : types) {
    if (t.isF64())
      f64 = true;
    else if (t.isBF16() || t.isF16())
      sixteen = true;
    else if (!t.isF32())
      return std::nullopt;
  }
  if (f64 && sixteen)
    return std::nullopt;
  MLIRContext *ctx = types.empty() ? nullptr : types.front().getContext();
  if (!ctx)
    return std::nullopt;
  return f64 ? FloatType(Float64Type::get(ctx)) : Float32Type::get(ctx);
}

Value titan::buildFloatConstant(OpBuilder &b, Location loc, Type type,
                                double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

const PointwiseOpInterface::Concept *
titan::lookupPointwiseSemantics(MLIRContext *ctx, StringRef name) {
  std::optional<RegisteredOperationName> op =
      RegisteredOperationName::lookup(name, ctx);
  return op ? op->getInterface<PointwiseOpInterface>() : nullptr;
}

namespace {

/// sigmoid(x) = 1 / (1 + exp(-x)).
Value sigmoid(OpBuilder &b, Location loc, Value x) {
  Value one = buildFloatConstantLike(b, loc, x, 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, one,
                               arith::AddFOp::create(b, loc, one, e));
}

/// silu(x) = x / (1 + exp(-x)).
Value silu(OpBuilder &b, Location loc, Value x) {
  Value one = buildFloatConstantLike(b, loc, x, 1.0);
  Value e = math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, x));
  return arith::DivFOp::create(b, loc, x,
                               arith::AddFOp::create(b, loc, one, e));
}

/// silu'(x) = s * (1 + x * (1 - s)), s = sigmoid(x).
Value siluDerivative(OpBuilder &b, Location loc, Value x, Value s) {
  Value one = buildFloatConstantLike(b, loc, x, 1.0);
  Value oneMinusS = arith::SubFOp::create(b, loc, one, s);
  Value inner = arith::AddFOp::create(
      b, loc, one, arith::MulFOp::create(b, loc, x, oneMinusS));
  return arith::MulFOp::create(b, loc, s, inner);
}
} // namespace

SmallVector<Value> AddOp::buildScalar(OpBuilder &b, Location loc,
                                      ValueRange operands,
                                      ArrayRef<Attribute>) {
  return {arith::AddFOp::create(b, loc, operands[0], operands[1])};
}

SmallVector<Value> MulOp::buildScalar(OpBuilder &b, Location loc,
                                      ValueRange operands,
                                      ArrayRef<Attribute>) {
  return {arith::MulFOp::create(b, loc, operands[0], operands[1])};
}

SmallVector<Value> SqrtOp::buildScalar(OpBuilder &b, Location loc,
                                       ValueRange operands,
                                       ArrayRef<Attribute>) {
  return {math::SqrtOp::create(b, loc, operands[0])};
}

SmallVector<Value> SiLUOp::buildScalar(OpBuilder &b, Location loc,
                                       ValueRange operands,
                                       ArrayRef<Attribute>) {
  return {silu(b, loc, operands[0])};
}

/// gate * sigmoid(gate) * up, as silu(gate) * up.
SmallVector<Value> SwiGLUOp::buildScalar(OpBuilder &b, Location loc,
                                         ValueRange operands,
                                         ArrayRef<Attribute>) {
  return {
      arith::MulFOp::create(b, loc, silu(b, loc, operands[0]), operands[1])};
}

/// (input, grad) -> grad * silu'(input).
SmallVector<Value> SiLUGradOp::buildScalar(OpBuilder &b, Location loc,
                                           ValueRange operands,
                                           ArrayRef<Attribute>) {
  Value x = operands[0], dy = operands[1];
  Value s = sigmoid(b, loc, x);
  return {arith::MulFOp::create(b, loc, dy, siluDerivative(b, loc, x, s))};
}

/// (gate, up, grad) -> (grad * up * silu'(gate), grad * gate * s).
SmallVector<Value> SwiGLUGradOp::buildScalar(OpBuilder &b, Location loc,
                                             ValueRange operands,
                                             ArrayRef<Attribute>) {
  Value gate = operands[0], up = operands[1], dy = operands[2];
  Value s = sigmoid(b, loc, gate);
  Value dyUp = arith::MulFOp::create(b, loc, dy, up);
  Value gateGrad =
      arith::MulFOp::create(b, loc, dyUp, siluDerivative(b, loc, gate, s));
  Value dyGate = arith::MulFOp::create(b, loc, dy, gate);
  return {gateGrad, arith::MulFOp::create(b, loc, dyGate, s)};
}

/// The conversion is the generator's rounding to the result's type.
SmallVector<Value> CastOp::buildScalar(OpBuilder &b, Location loc,
                                       ValueRange operands,
                                       ArrayRef<Attribute>) {
  return {operands[0]};
}
