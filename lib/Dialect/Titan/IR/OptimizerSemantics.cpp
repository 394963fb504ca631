//===- OptimizerSemantics.cpp - AdamW's scalar bodies ---------------------===//
//
// The step's AdamW scalars and one element of AdamW's update, in arith/math:
// the only definition of the optimizer's arithmetic (TitanOps.td's
// formulas). The order of every product and sum is PyTorch's
// (torch.nn.utils.clip_grad_norm_, then torch.optim.AdamW's single-tensor
// path), each rounded: no target contracts them.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/PointwiseInterface.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace titan;

namespace {
/// The f64 parameter `i` of a call (a hyperparameter), or nothing.
std::optional<double> param(ArrayRef<Attribute> params, unsigned i) {
  auto attr = i < params.size() ? dyn_cast<FloatAttr>(params[i]) : nullptr;
  if (!attr)
    return std::nullopt;
  return attr.getValueAsDouble();
}

/// Float `v` in `type`: exact when `type` is at least as wide.
Value toFloat(OpBuilder &b, Location loc, Value v, Type type) {
  if (v.getType() == type)
    return v;
  if (v.getType().getIntOrFloatBitWidth() < type.getIntOrFloatBitWidth())
    return arith::ExtFOp::create(b, loc, type, v);
  return arith::TruncFOp::create(b, loc, type, v);
}

/// clip_grad_norm_'s factor in f32: min(1, max_norm * (1 / (norm + 1e-6)))
/// (std::min's order: 1 only when 1 < factor); NaN when the norm is not
/// finite, which titan.adamw reads as "keep the state" (PyTorch's factor
/// for an infinite norm, 0, can also be a finite norm's underflow).
Value clipCoefficient(OpBuilder &b, Location loc, Value gradNorm,
                      double maxNorm) {
  Type f32 = b.getF32Type();
  // One op per statement: the order of a call's arguments is unspecified,
  // and the IR must not depend on the host compiler.
  Value norm = toFloat(b, loc, gradNorm, f32);
  Value one = buildFloatConstant(b, loc, f32, 1.0);
  Value epsilon = buildFloatConstant(b, loc, f32, 1e-6);
  Value shifted = arith::AddFOp::create(b, loc, norm, epsilon);
  Value inverse = arith::DivFOp::create(b, loc, one, shifted);
  Value limit = buildFloatConstant(b, loc, f32, maxNorm);
  Value factor = arith::MulFOp::create(b, loc, limit, inverse);
  Value above =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, one, factor);
  Value clipped = arith::SelectOp::create(b, loc, above, one, factor);
  Value infinity =
      buildFloatConstant(b, loc, f32, std::numeric_limits<double>::infinity());
  Value magnitude = math::AbsFOp::create(b, loc, norm);
  Value finite = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::ONE,
                                       magnitude, infinity);
  Value nan =
      buildFloatConstant(b, loc, f32, std::numeric_limits<double>::quiet_NaN());
  return arith::SelectOp::create(b, loc, finite, clipped, nan);
}

/// 1 - beta^t in f64.
Value biasCorrection(OpBuilder &b, Location loc, double beta, Value t) {
  Type f64 = b.getF64Type();
  Value base = buildFloatConstant(b, loc, f64, beta);
  Value power = math::PowFOp::create(b, loc, base, t);
  Value one = buildFloatConstant(b, loc, f64, 1.0);
  return arith::SubFOp::create(b, loc, one, power);
}
} // namespace

//===----------------------------------------------------------------------===//
// titan.adamw_scalars
//===----------------------------------------------------------------------===//

SmallVector<Value> AdamWScalarsOp::buildScalar(OpBuilder &b, Location loc,
                                               ValueRange operands,
                                               ArrayRef<Attribute> params) {
  std::optional<double> beta1 = param(params, 0), beta2 = param(params, 1),
                        weightDecay = param(params, 2),
                        maxNorm = param(params, 3);
  if (operands.size() != 3 || !beta1 || !beta2 || !weightDecay || !maxNorm ||
      !operands[2].getType().isInteger(64))
    return {};
  Type f64 = b.getF64Type();
  Value lr = toFloat(b, loc, operands[0], f64);
  Value nextStep = arith::AddIOp::create(
      b, loc, operands[2],
      arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(1)));
  Value t = arith::SIToFPOp::create(b, loc, f64, nextStep);
  Value weightDecayValue = buildFloatConstant(b, loc, f64, *weightDecay);
  Value lrDecay = arith::MulFOp::create(b, loc, lr, weightDecayValue);
  Value one = buildFloatConstant(b, loc, f64, 1.0);
  Value decay = arith::SubFOp::create(b, loc, one, lrDecay);
  Value stepSize = arith::NegFOp::create(
      b, loc,
      arith::DivFOp::create(b, loc, lr, biasCorrection(b, loc, *beta1, t)));
  Value correction2Sqrt =
      math::SqrtOp::create(b, loc, biasCorrection(b, loc, *beta2, t));
  return {clipCoefficient(b, loc, operands[1], *maxNorm), decay, stepSize,
          correction2Sqrt};
}

//===----------------------------------------------------------------------===//
// titan.adamw
//===----------------------------------------------------------------------===//

SmallVector<Value> AdamWOp::buildScalar(OpBuilder &b, Location loc,
                                        ValueRange operands,
                                        ArrayRef<Attribute> params) {
  std::optional<double> beta1 = param(params, 0), beta2 = param(params, 1),
                        eps = param(params, 2);
  if (operands.size() != 8 || !beta1 || !beta2 || !eps)
    return {};
  Value p = operands[0], g = operands[1], m = operands[2], v = operands[3],
        clipCoef = operands[4], decay = operands[5], stepSize = operands[6],
        correction2Sqrt = operands[7];
  Type type = p.getType();
  auto mul = [&](Value x, Value y) {
    return arith::MulFOp::create(b, loc, x, y).getResult();
  };
  auto add = [&](Value x, Value y) {
    return arith::AddFOp::create(b, loc, x, y).getResult();
  };
  auto div = [&](Value x, Value y) {
    return arith::DivFOp::create(b, loc, x, y).getResult();
  };
  Value clipped = mul(g, clipCoef);
  Value decayed = mul(p, decay);
  auto constant = [&](double value) {
    return buildFloatConstant(b, loc, type, value);
  };
  // One op per statement (an argument list's order is unspecified, and the
  // IR must not depend on the host compiler).
  Value newGradPart = mul(constant(1.0 - *beta1), clipped);
  Value oldM = mul(m, constant(*beta1));
  Value newM = add(oldM, newGradPart);
  Value gradSquaredPart = mul(mul(constant(1.0 - *beta2), clipped), clipped);
  Value oldV = mul(v, constant(*beta2));
  Value newV = add(oldV, gradSquaredPart);
  Value epsilon = constant(*eps);
  Value rms = div(math::SqrtOp::create(b, loc, newV), correction2Sqrt);
  Value denom = add(rms, epsilon);
  Value newP = add(decayed, div(mul(stepSize, newM), denom));
  // A non-finite global norm (clip_coef NaN) skips the step: the state
  // keeps its values rather than take NaN from every gradient. Worth paying
  // every step: a loop-invariant test and three selects in a pass bound by
  // its seven streams (about 1% of the update on one CPU thread), where a
  // branch around the update would split every target's launches. The
  // runtime then stops the run naming the gradient.
  Value skip = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO,
                                     clipCoef, clipCoef);
  auto keep = [&](Value old, Value updated) {
    return arith::SelectOp::create(b, loc, skip, old, updated).getResult();
  };
  return {keep(p, newP), keep(m, newM), keep(v, newV)};
}
