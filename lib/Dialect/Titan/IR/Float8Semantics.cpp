//===- Float8Semantics.cpp - float8 scale and quantize, per element -------===//
//
// The scalar bodies of titan.float8_scale and titan.quantize (see
// PointwiseSemantics.cpp): the kernels generated from them are the only
// implementation of these ops where they are pointwise (a tensorwise or
// per-element scale, an untransposed result). The float8 encoding is
// integer arithmetic on the f32 bits, so every target rounds alike, with
// no float8 type in LLVM.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/PointwiseInterface.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>

using namespace mlir;
using namespace titan;

namespace {

/// Integer and f32 constants and the ops the encoding uses, on one
/// builder.
struct Emitter {
  OpBuilder &b;
  Location loc;

  Value i32(int64_t v) {
    return arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(v));
  }
  Value f32(double v) {
    return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
  }
  Value select(Value c, Value t, Value f) {
    return arith::SelectOp::create(b, loc, c, t, f);
  }
  Value cmpi(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
  Value cmpf(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  /// `v` rounded to f32 (exact for an f32 operand widened to f64).
  Value toF32(Value v) {
    if (v.getType().isF32())
      return v;
    return arith::TruncFOp::create(b, loc, b.getF32Type(), v);
  }
};

/// The layout of a float8 format: mantissa bits, exponent bias, largest
/// finite value, and the code of that value.
struct Float8Format {
  int64_t mantissaBits, bias;
  double maxFinite;
  int64_t maxCode;
  bool e5m2;
};

std::optional<Float8Format> float8Format(int64_t code) {
  if (code == 0)
    return Float8Format{3, 7, 448.0, 0x7e, false};
  if (code == 1)
    return Float8Format{2, 15, 57344.0, 0x7b, true};
  return std::nullopt;
}

/// `x` (f32) rounded to nearest even in format `f`, saturating: a value
/// past the largest finite one by half a unit in the last place or more
/// (an e4m3 tie at 464 rounds to the even 448) becomes that value with
/// its sign; NaN becomes 0x7f. This is CUDA's __nv_cvt_float_to_fp8 with
/// __NV_SATFINITE, as torchao's saturated cast computes it. Returns the
/// code as i32.
Value encodeFloat8(Emitter &e, Value x, const Float8Format &f) {
  using P = arith::CmpIPredicate;
  OpBuilder &b = e.b;
  Location loc = e.loc;
  Value bits = arith::BitcastOp::create(b, loc, b.getI32Type(), x);
  Value sign = arith::ShLIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, e.i32(31)), e.i32(7));
  Value a = math::AbsFOp::create(b, loc, x);
  Value isNaN = e.cmpf(arith::CmpFPredicate::UNO, x, x);
  double halfUlp =
      std::ldexp(1.0, int(std::ilogb(f.maxFinite)) - int(f.mantissaBits) - 1);
  Value saturates =
      e.cmpf(f.e5m2 ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OGT, a,
             e.f32(f.maxFinite + halfUlp));
  // The rest computes on a finite, representable-range value only.
  a = e.select(arith::OrIOp::create(b, loc, isNaN, saturates), e.f32(0), a);
  Value aBits = arith::BitcastOp::create(b, loc, b.getI32Type(), a);
  // floor(log2(a)), at least the smallest normal exponent (subnormals
  // share its spacing); f32 zeros and subnormals read -127, clamped.
  Value exponent = arith::SubIOp::create(
      b, loc,
      arith::AndIOp::create(b, loc,
                            arith::ShRUIOp::create(b, loc, aBits, e.i32(23)),
                            e.i32(0xff)),
      e.i32(127));
  exponent = arith::MaxSIOp::create(b, loc, exponent, e.i32(1 - f.bias));
  // a / 2^(exponent - mantissaBits), exact: the multiplier is a power of
  // two built from its bits.
  Value inverseQuantumBits = arith::ShLIOp::create(
      b, loc,
      arith::SubIOp::create(b, loc, e.i32(f.mantissaBits + 127), exponent),
      e.i32(23));
  Value inverseQuantum =
      arith::BitcastOp::create(b, loc, b.getF32Type(), inverseQuantumBits);
  Value units = arith::FPToUIOp::create(
      b, loc, b.getI32Type(),
      math::RoundEvenOp::create(
          b, loc, arith::MulFOp::create(b, loc, a, inverseQuantum)));
  // A carry into the next binade is that binade's first value.
  Value carry = e.cmpi(P::uge, units, e.i32(2 << f.mantissaBits));
  units =
      e.select(carry, arith::ShRUIOp::create(b, loc, units, e.i32(1)), units);
  exponent = e.select(carry, arith::AddIOp::create(b, loc, exponent, e.i32(1)),
                      exponent);
  Value implicit = e.i32(1 << f.mantissaBits);
  Value normal = arith::OrIOp::create(
      b, loc,
      arith::ShLIOp::create(
          b, loc, arith::AddIOp::create(b, loc, exponent, e.i32(f.bias)),
          e.i32(f.mantissaBits)),
      arith::SubIOp::create(b, loc, units, implicit));
  Value code = e.select(e.cmpi(P::ult, units, implicit), units, normal);
  code = e.select(saturates, e.i32(f.maxCode), code);
  code = arith::OrIOp::create(b, loc, sign, code);
  return e.select(isNaN, e.i32(0x7f), code);
}

std::optional<int64_t> intParam(ArrayRef<Attribute> params, unsigned i) {
  auto attr = i < params.size() ? dyn_cast<IntegerAttr>(params[i]) : nullptr;
  return attr ? std::optional<int64_t>(attr.getInt()) : std::nullopt;
}
} // namespace

/// (input) -> amax; params {reduction}. Tensorwise (reduction 0), each
/// element's value as f32, reduced by absolute maximum; a row or column
/// amax is a library kernel.
SmallVector<Value> AmaxOp::buildScalar(OpBuilder &b, Location loc,
                                       ValueRange operands,
                                       ArrayRef<Attribute> params) {
  if (params.size() != 1 || intParam(params, 0) != 0)
    return {};
  Emitter e{b, loc};
  return {e.toF32(operands[0])};
}

unsigned AmaxOp::getNumAbsMaxResults(ArrayRef<Attribute> params) { return 1; }

/// (amax) -> scale; params {round to a power of 2, largest finite float8
/// value}. torchao's amax_to_scale: max_finite / max(amax, 1e-12) in f64,
/// rounded to f32; then, as torchao rounds to a power of two,
/// exp2(floor(log2(s))) in f32 (log2 the target's f32 function, as
/// torch.log2 is: a scale within an ulp or two below 2^k has log2 k and
/// becomes 2^k; exp2 of the integer is exact, built from its bits).
SmallVector<Value> Float8ScaleOp::buildScalar(OpBuilder &b, Location loc,
                                              ValueRange operands,
                                              ArrayRef<Attribute> params) {
  std::optional<int64_t> powerOf2 = intParam(params, 0);
  auto maxFinite =
      params.size() == 2 ? dyn_cast<FloatAttr>(params[1]) : FloatAttr();
  if (!powerOf2 || !maxFinite)
    return {};
  Emitter e{b, loc};
  Value amax =
      arith::ExtFOp::create(b, loc, b.getF64Type(), e.toF32(operands[0]));
  Value floor = arith::ConstantOp::create(b, loc, b.getF64FloatAttr(1e-12));
  // maximumf propagates NaN, as the reference's max does.
  Value denominator = arith::MaximumFOp::create(b, loc, amax, floor);
  Value scale = e.toF32(arith::DivFOp::create(
      b, loc,
      arith::ConstantOp::create(
          b, loc, b.getF64FloatAttr(maxFinite.getValueAsDouble())),
      denominator));
  if (*powerOf2) {
    // s is positive: 448 / 1e-12 at most, 448 / FLT_MAX at least, so
    // floor(log2(s)) is an integer in [-127, 49]; 0 (an infinite amax)
    // and NaN pass through, as exp2(floor(log2)) leaves them.
    Value floorLog2 =
        math::FloorOp::create(b, loc, math::Log2Op::create(b, loc, scale));
    Value special = arith::OrIOp::create(
        b, loc, e.cmpf(arith::CmpFPredicate::UNO, scale, scale),
        e.cmpf(arith::CmpFPredicate::OEQ, scale, e.f32(0)));
    Value exponent = arith::FPToSIOp::create(
        b, loc, b.getI32Type(), e.select(special, e.f32(0), floorLog2));
    Value power = arith::BitcastOp::create(
        b, loc, b.getF32Type(),
        arith::ShLIOp::create(
            b, loc, arith::AddIOp::create(b, loc, exponent, e.i32(127)),
            e.i32(23)));
    scale = e.select(special, scale, power);
  }
  if (operands[0].getType().isF64())
    scale = arith::ExtFOp::create(b, loc, b.getF64Type(), scale);
  return {scale};
}

/// (input, scale) -> float8; params {format: 0 f8E4M3FN, 1 f8E5M2,
/// transposed}: f32(input) * scale, encoded saturating. Transposed, the
/// same values are written to their transposed places (writesTransposed).
SmallVector<Value> QuantizeOp::buildScalar(OpBuilder &b, Location loc,
                                           ValueRange operands,
                                           ArrayRef<Attribute> params) {
  std::optional<int64_t> code = intParam(params, 0);
  std::optional<int64_t> transposed = intParam(params, 1);
  std::optional<Float8Format> format =
      code ? float8Format(*code) : std::nullopt;
  if (!format || !transposed || (*transposed != 0 && *transposed != 1) ||
      params.size() != 2)
    return {};
  Emitter e{b, loc};
  Value scaled =
      arith::MulFOp::create(b, loc, e.toF32(operands[0]), e.toF32(operands[1]));
  Value bits = arith::TruncIOp::create(b, loc, b.getI8Type(),
                                       encodeFloat8(e, scaled, *format));
  Type f8 = format->e5m2 ? Type(b.getType<Float8E5M2Type>())
                         : Type(b.getType<Float8E4M3FNType>());
  return {arith::BitcastOp::create(b, loc, f8, bits)};
}

/// input -> the same element, written transposed (a float8 element comes
/// as its float8 value: no arithmetic touches it).
SmallVector<Value> TransposeOp::buildScalar(OpBuilder &b, Location loc,
                                            ValueRange operands,
                                            ArrayRef<Attribute> params) {
  if (operands.size() != 1 || !params.empty())
    return {};
  return {operands[0]};
}

bool TransposeOp::writesTransposed(ArrayRef<Attribute>) { return true; }

bool QuantizeOp::writesTransposed(ArrayRef<Attribute> params) {
  std::optional<int64_t> transposed = intParam(params, 1);
  return transposed && *transposed == 1;
}
