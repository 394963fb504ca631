//===- PointwiseSemanticsTest.cpp - pointwise ops' scalar bodies ----------===//
//
// The scalar semantics the generated kernels follow (PointwiseInterface),
// evaluated in f64 by MLIR's constant folding: each op computes its
// formula, and each gradient op's body is the derivative of its op's body
// (central finite differences), as the adjoints assume.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/PointwiseInterface.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace mlir;
using namespace titan;

namespace {

class PointwiseSemantics : public ::testing::Test {
protected:
  PointwiseSemantics() {
    context.loadDialect<TitanDialect, arith::ArithDialect, math::MathDialect,
                        func::FuncDialect>();
  }

  /// The results of op `name`'s scalar body at `operands`, in f64, folded
  /// to constants by MLIR (NaN when a result does not fold).
  std::vector<double> evaluate(StringRef name, ArrayRef<double> operands) {
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
    SmallVector<Value> results = semantics->buildScalar(b, loc, args);
    func::ReturnOp::create(b, loc, results);
    fn.setFunctionType(b.getFunctionType({}, ValueRange(results).getTypes()));
    // The greedy driver folds every op whose operands are constants.
    EXPECT_TRUE(
        succeeded(applyPatternsGreedily(fn, FrozenRewritePatternSet())));
    std::vector<double> values;
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());
    for (Value v : ret.getOperands()) {
      FloatAttr value;
      if (auto constant = v.getDefiningOp<arith::ConstantOp>())
        value = dyn_cast<FloatAttr>(constant.getValue());
      values.push_back(value ? value.getValueAsDouble() : std::nan(""));
    }
    return values;
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
