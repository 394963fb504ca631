//===- PointwiseSemanticsTest.cpp - pointwise ops' scalar bodies ----------===//
//
// The scalar semantics the generated kernels follow (PointwiseInterface),
// evaluated in f64 by MLIR's constant folding: each op computes its
// formula, and each gradient op's body is the derivative of its op's body
// (central finite differences), as the adjoints assume. The float8 bodies
// follow torchao's amax_to_scale, and the saturating float8 encoding
// agrees bit for bit with LLVM's APFloat conversion and with the runtime
// library's encoder (LowPrecision.h), which the transposed quantize still
// uses.
//
//===----------------------------------------------------------------------===//

#include "LowPrecision.h"
#include "titan/Dialect/Titan/IR/PointwiseInterface.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

using namespace mlir;
using namespace titan;

namespace {

/// arith.truncf of a constant, rounded to nearest even (what fptrunc does
/// at run time; arith's folder folds only exact truncations).
struct FoldTruncF : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    FloatAttr in;
    if (!matchPattern(op.getIn(), m_Constant(&in)))
      return failure();
    llvm::APFloat v = in.getValue();
    bool losesInfo;
    v.convert(cast<FloatType>(op.getType()).getFloatSemantics(),
              llvm::APFloat::rmNearestTiesToEven, &losesInfo);
    rewriter.replaceOpWithNewOp<arith::ConstantOp>(
        op, rewriter.getFloatAttr(op.getType(), v));
    return success();
  }
};

class PointwiseSemantics : public ::testing::Test {
protected:
  PointwiseSemantics() {
    context.loadDialect<TitanDialect, arith::ArithDialect, math::MathDialect,
                        func::FuncDialect>();
  }

  /// The results of op `name`'s scalar body at `operands` (in f64) for a
  /// call with `params`, folded to constants by MLIR (null when a result
  /// does not fold; none when the body refuses the parameters).
  std::vector<FloatAttr> evaluateAttrs(StringRef name,
                                       ArrayRef<double> operands,
                                       ArrayRef<Attribute> params = {}) {
    const PointwiseOpInterface::Concept *semantics =
        lookupPointwiseSemantics(&context, name);
    EXPECT_NE(semantics, nullptr) << name.str();
    if (!semantics)
      return {};
    OpBuilder b(&context);
    Location loc = b.getUnknownLoc();
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
    b.setInsertionPointToEnd(module->getBody());
    auto fn = func::FuncOp::create(b, loc, "body", b.getFunctionType({}, {}));
    b.setInsertionPointToStart(fn.addEntryBlock());
    SmallVector<Value> args;
    for (double x : operands)
      args.push_back(arith::ConstantOp::create(b, loc, b.getF64FloatAttr(x)));
    SmallVector<Value> results = semantics->buildScalar(b, loc, args, params);
    func::ReturnOp::create(b, loc, results);
    fn.setFunctionType(b.getFunctionType({}, ValueRange(results).getTypes()));
    // The greedy driver folds every op whose operands are constants.
    RewritePatternSet truncations(&context);
    truncations.add<FoldTruncF>(&context);
    EXPECT_TRUE(succeeded(applyPatternsGreedily(fn, std::move(truncations))));
    std::vector<FloatAttr> values;
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    for (Value v : ret.getOperands()) {
      auto constant = v.getDefiningOp<arith::ConstantOp>();
      values.push_back(constant ? dyn_cast<FloatAttr>(constant.getValue())
                                : FloatAttr());
    }
    return values;
  }

  /// evaluateAttrs' results as doubles (NaN when one does not fold).
  std::vector<double> evaluate(StringRef name, ArrayRef<double> operands,
                               ArrayRef<Attribute> params = {}) {
    std::vector<double> values;
    for (FloatAttr value : evaluateAttrs(name, operands, params))
      values.push_back(value ? value.getValueAsDouble() : std::nan(""));
    return values;
  }

  /// titan.quantize's code for `x` (scale 1) in `format` (0 e4m3, 1 e5m2),
  /// or -1 when the body does not fold.
  int quantizeCode(float x, int64_t format) {
    Builder b(&context);
    std::vector<FloatAttr> q =
        evaluateAttrs("titan.quantize", {double(x), 1.0},
                      {b.getI64IntegerAttr(format), b.getI64IntegerAttr(0)});
    if (q.size() != 1 || !q[0])
      return -1;
    return int(q[0].getValue().bitcastToAPInt().getZExtValue());
  }

  /// d/d(operand i) of result j of `name`, by central differences.
  double derivative(StringRef name, std::vector<double> at, size_t i,
                    size_t j) {
    const double h = 1e-6;
    std::vector<double> up = at, down = at;
    up[i] += h;
    down[i] -= h;
    return (evaluate(name, up)[j] - evaluate(name, down)[j]) / (2 * h);
  }

  MLIRContext context;
};

} // namespace

TEST_F(PointwiseSemantics, OpsComputeTheirFormulas) {
  double x = 0.75, y = -1.5;
  double sigmoid = 1 / (1 + std::exp(-x));
  EXPECT_DOUBLE_EQ(evaluate("titan.add", {x, y})[0], x + y);
  EXPECT_DOUBLE_EQ(evaluate("titan.mul", {x, y})[0], x * y);
  EXPECT_DOUBLE_EQ(evaluate("titan.sqrt", {2.25})[0], 1.5);
  EXPECT_DOUBLE_EQ(evaluate("titan.silu", {x})[0], x * sigmoid);
  EXPECT_DOUBLE_EQ(evaluate("titan.swiglu", {x, y})[0], x * sigmoid * y);
  // A cast's conversion is the generator's rounding: the body is identity.
  EXPECT_DOUBLE_EQ(evaluate("titan.cast", {x})[0], x);
}

TEST_F(PointwiseSemantics, GradientOpsAreTheDerivatives) {
  for (double x : {-3.0, -0.5, 0.0, 0.25, 2.0}) {
    SCOPED_TRACE("x " + std::to_string(x));
    double dy = 0.625, up = -1.25;
    // silu_grad(x, dy) = dy * silu'(x).
    EXPECT_NEAR(evaluate("titan.silu_grad", {x, dy})[0],
                dy * derivative("titan.silu", {x}, 0, 0), 1e-8);
    // swiglu_grad(gate, up, dy) = (dy * d/dgate, dy * d/dup).
    std::vector<double> grads = evaluate("titan.swiglu_grad", {x, up, dy});
    ASSERT_EQ(grads.size(), 2u);
    EXPECT_NEAR(grads[0], dy * derivative("titan.swiglu", {x, up}, 0, 0), 1e-8);
    EXPECT_NEAR(grads[1], dy * derivative("titan.swiglu", {x, up}, 1, 0), 1e-8);
  }
}

TEST_F(PointwiseSemantics, ComputeType) {
  Builder b(&context);
  EXPECT_EQ(pointwiseComputeType({b.getBF16Type(), b.getF32Type()}),
            b.getF32Type());
  EXPECT_EQ(pointwiseComputeType({b.getF16Type()}), b.getF32Type());
  EXPECT_EQ(pointwiseComputeType({b.getF64Type(), b.getF32Type()}),
            b.getF64Type());
  // Rounding f64 to a 16-bit type through f32 would round twice; float8
  // and integers are the library's.
  EXPECT_EQ(pointwiseComputeType({b.getF64Type(), b.getBF16Type()}),
            std::nullopt);
  EXPECT_EQ(
      pointwiseComputeType({b.getF32Type(), b.getType<Float8E4M3FNType>()}),
      std::nullopt);
  EXPECT_EQ(pointwiseComputeType({b.getI32Type()}), std::nullopt);
  EXPECT_EQ(lookupPointwiseSemantics(&context, "titan.rms_norm"), nullptr);
}

TEST_F(PointwiseSemantics, Float8ScaleIsTorchaosAmaxToScale) {
  Builder b(&context);
  auto scale = [&](double amax, bool powerOf2) {
    return evaluate("titan.float8_scale", {amax},
                    {b.getI64IntegerAttr(powerOf2), b.getF64FloatAttr(448.0)})
        .at(0);
  };
  // fmax / max(amax, 1e-12) in f64, then f32.
  EXPECT_EQ(scale(1.0, false), 448.0);
  EXPECT_EQ(scale(double(3.3f), false), double(float(448.0 / double(3.3f))));
  EXPECT_EQ(scale(0.0, false), double(float(448.0 / 1e-12)));
  EXPECT_EQ(scale(double(1e-13f), false), double(float(448.0 / 1e-12)));
  EXPECT_EQ(scale(448.0, false), 1.0);
  EXPECT_TRUE(std::isnan(scale(std::nan(""), false)));
  EXPECT_EQ(scale(INFINITY, false), 0.0);
  // Rounded down to a power of two as torchao does, exp2(floor(log2(s)))
  // in f32: 448 -> 256, 135.75... -> 128; 2^40 less an ulp has log2 40 in
  // f32, so it becomes 2^40.
  EXPECT_EQ(scale(1.0, true), 256.0);
  EXPECT_EQ(scale(double(3.3f), true), 128.0);
  EXPECT_EQ(scale(448.0, true), 1.0);
  EXPECT_EQ(scale(448.0 / double(std::nextafter(0x1p40f, 0.0f)), true),
            std::ldexp(1.0, 40));
  EXPECT_TRUE(std::isnan(scale(std::nan(""), true)));
  EXPECT_EQ(scale(INFINITY, true), 0.0);
  // Malformed parameters leave the call to a library.
  EXPECT_TRUE(evaluateAttrs("titan.float8_scale", {1.0}, {}).empty());
}

TEST_F(PointwiseSemantics, QuantizeIsTheSaturatingFloat8Cast) {
  Builder b(&context);
  // x * scale, then the code (e4m3): 2.0 = 0x40; 600 saturates to 448
  // (0x7E); NaN is 0x7F; -0 is 0x80; 1e-3 rounds up to the smallest
  // subnormal 2^-9 (0x01).
  auto code = [&](double x, double scale) {
    std::vector<FloatAttr> q =
        evaluateAttrs("titan.quantize", {x, scale},
                      {b.getI64IntegerAttr(0), b.getI64IntegerAttr(0)});
    return int(q.at(0).getValue().bitcastToAPInt().getZExtValue());
  };
  EXPECT_EQ(code(1.0, 2.0), 0x40);
  EXPECT_EQ(code(300.0, 2.0), 0x7E);
  EXPECT_EQ(code(-1000.0, 2.0), 0xFE);
  EXPECT_EQ(code(std::nan(""), 2.0), 0x7F);
  EXPECT_EQ(code(-0.0, 1.0), 0x80);
  EXPECT_EQ(code(2e-3, 0.5), 0x01);
  // Transposed, the same code, which the kernel writes to its transposed
  // place; an unknown layout leaves the call to a library.
  std::vector<FloatAttr> transposed =
      evaluateAttrs("titan.quantize", {1.0, 2.0},
                    {b.getI64IntegerAttr(0), b.getI64IntegerAttr(1)});
  ASSERT_EQ(transposed.size(), 1u);
  EXPECT_EQ(transposed[0].getValue().bitcastToAPInt().getZExtValue(), 0x40u);
  EXPECT_TRUE(evaluateAttrs("titan.quantize", {1.0, 1.0},
                            {b.getI64IntegerAttr(0), b.getI64IntegerAttr(2)})
                  .empty());
  const PointwiseOpInterface::Concept *quantize =
      lookupPointwiseSemantics(&context, "titan.quantize");
  ASSERT_TRUE(quantize);
  EXPECT_TRUE(quantize->writesTransposed(
      {b.getI64IntegerAttr(0), b.getI64IntegerAttr(1)}));
  EXPECT_FALSE(quantize->writesTransposed(
      {b.getI64IntegerAttr(0), b.getI64IntegerAttr(0)}));
}

/// Every float8 value, the midpoints between neighbours (ties), a float
/// either side of each, the range's edges and random floats: the body's
/// code is APFloat's round-to-nearest-even conversion (saturated where it
/// overflows; NaN 0x7f) and the runtime encoder's.
TEST_F(PointwiseSemantics, Float8EncodingMatchesAPFloatAndTheRuntime) {
  for (int64_t format : {0, 1}) {
    bool e4m3 = format == 0;
    const llvm::fltSemantics &sem =
        e4m3 ? llvm::APFloat::Float8E4M3FN() : llvm::APFloat::Float8E5M2();
    titanrt::Dtype dtype =
        e4m3 ? titanrt::Dtype::f8E4M3FN : titanrt::Dtype::f8E5M2;
    std::vector<float> xs = {0.0f,   -0.0f,   INFINITY, -INFINITY, NAN,
                             1e-30f, -1e-45f, 3.4e38f,  1e6f,      -1e6f};
    for (int bits = 0; bits < 256; ++bits) {
      llvm::APFloat v(sem, llvm::APInt(8, bits));
      if (!v.isFinite())
        continue;
      bool losesInfo;
      v.convert(llvm::APFloat::IEEEsingle(), llvm::APFloat::rmNearestTiesToEven,
                &losesInfo);
      float f = v.convertToFloat();
      llvm::APFloat next(sem, llvm::APInt(8, bits + 1));
      float g = f;
      if (bits + 1 < 256 && next.isFinite()) {
        next.convert(llvm::APFloat::IEEEsingle(),
                     llvm::APFloat::rmNearestTiesToEven, &losesInfo);
        g = next.convertToFloat();
      }
      float mid = float((double(f) + double(g)) / 2);
      for (float x : {f, mid, std::nextafter(mid, -INFINITY),
                      std::nextafter(mid, INFINITY)})
        xs.push_back(x);
    }
    // Past the largest finite value: the overflow threshold and either side.
    for (float edge : {464.0f, 480.0f, 57344.0f, 61440.0f, 65536.0f})
      for (float x :
           {edge, std::nextafter(edge, 0.0f), std::nextafter(edge, INFINITY)})
        xs.push_back(x);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> exponent(-30.0f, 20.0f);
    for (int i = 0; i < 300; ++i)
      xs.push_back((i % 2 ? -1.0f : 1.0f) * std::exp2(exponent(rng)));

    for (float x : xs) {
      SCOPED_TRACE("format " + std::to_string(format) + " x " +
                   std::to_string(x));
      llvm::APFloat ref(x);
      bool losesInfo;
      ref.convert(sem, llvm::APFloat::rmNearestTiesToEven, &losesInfo);
      int expected;
      if (std::isnan(x))
        expected = 0x7f;
      else if (ref.isNaN() || ref.isInfinity()) // overflow: saturated
        expected = (std::signbit(x) ? 0x80 : 0) | (e4m3 ? 0x7e : 0x7b);
      else
        expected = int(ref.bitcastToAPInt().getZExtValue());
      EXPECT_EQ(quantizeCode(x, format), expected);
      EXPECT_EQ(int(titanrt::floatToFp8(x, dtype, /*saturate=*/true)),
                expected);
    }
  }
}

TEST_F(PointwiseSemantics, AdamWKeepsTheStateWhenTheNormIsNotFinite) {
  Builder b(&context);
  SmallVector<Attribute> params = {
      b.getF64FloatAttr(0.9), b.getF64FloatAttr(0.95), b.getF64FloatAttr(1e-8)};
  double p = 0.5, m = 0.01, v = 0.002;
  // A finite coefficient moves the state.
  std::vector<double> moved =
      evaluate("titan.adamw", {p, 0.25, m, v, 0.5, 0.999, -1e-3, 0.3}, params);
  ASSERT_EQ(moved.size(), 3u);
  EXPECT_TRUE(std::isfinite(moved[0]) && std::isfinite(moved[1]) &&
              std::isfinite(moved[2]));
  EXPECT_NE(moved[0], p);
  EXPECT_NE(moved[1], m);
  EXPECT_NE(moved[2], v);
  // titan.adamw_scalars' NaN coefficient (a NaN or infinite global norm)
  // keeps it, whatever the gradient holds.
  double nan = std::nan("");
  for (double g : {0.25, nan, double(INFINITY)}) {
    SCOPED_TRACE("grad " + std::to_string(g));
    std::vector<double> kept =
        evaluate("titan.adamw", {p, g, m, v, nan, 0.999, -1e-3, 0.3}, params);
    ASSERT_EQ(kept.size(), 3u);
    EXPECT_EQ(kept[0], p);
    EXPECT_EQ(kept[1], m);
    EXPECT_EQ(kept[2], v);
  }
}
