//===- ExpandFloat8.cpp - float8 GEMMs as casts and scaled GEMMs ----------===//
//
// torchao's Float8LinearConfig per recipe, GEMM by GEMM: how each operand is
// cast (float8 type, scaling granularity, power-of-two scales), then the
// scaled GEMM (or, for rowwise_with_gw_hp's weight gradient, the
// high-precision one).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace titan {
#define GEN_PASS_DEF_TITANEXPANDFLOAT8
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {

/// How one GEMM operand is cast.
enum class Scaling { Tensorwise, Rows, Columns };
struct Cast {
  Scaling scaling;
  bool e5m2 = false;
  bool powerOf2 = false;
};

/// One cast operand: its float8 copy and its scale.
struct Scaled {
  Value value, scale;
};

class Float8Expander {
public:
  Float8Expander(OpBuilder &b, Operation *op) : b(b), op(op) {
    auto dims = op->getAttrOfType<DenseI64ArrayAttr>("split_dims");
    axes = op->getAttrOfType<ArrayAttr>("split_axes");
    if (dims)
      split.assign(dims.asArrayRef().begin(), dims.asArrayRef().end());
    else
      split.assign(3, -1);
  }

  /// `v` (operand `index` of the op) cast as `how` says.
  Scaled scale(Value v, unsigned index, Cast how) {
    Location loc = op->getLoc();
    auto type = cast<RankedTensorType>(v.getType());
    int64_t rank = type.getRank();
    SmallVector<int64_t> dims, shape;
    if (how.scaling == Scaling::Rows)
      dims.push_back(rank - 1);
    else if (how.scaling == Scaling::Columns)
      for (int64_t d = 0; d + 1 < rank; ++d)
        dims.push_back(d);
    if (how.scaling != Scaling::Tensorwise) {
      shape.assign(type.getShape().begin(), type.getShape().end());
      for (int64_t d : dims)
        shape[d] = 1;
    }
    auto f32 = RankedTensorType::get(shape, b.getF32Type());
    Value amax = AmaxOp::create(b, loc, f32, v,
                                how.scaling == Scaling::Tensorwise
                                    ? DenseI64ArrayAttr()
                                    : b.getDenseI64ArrayAttr(dims));
    // The whole tensor's amax when the operand is split along a reduced
    // dimension.
    int64_t splitDim = split[index];
    if (splitDim >= 0 && axes &&
        (how.scaling == Scaling::Tensorwise ||
         llvm::is_contained(dims, splitDim))) {
      auto future = dist::AllReduceStartOp::create(
          b, loc, dist::FutureType::get(b.getContext(), f32), amax, axes,
          b.getStringAttr("max"));
      amax = dist::WaitOp::create(b, loc, future);
    }
    Type f8 = how.e5m2 ? Type(b.getType<Float8E5M2Type>())
                       : Type(b.getType<Float8E4M3FNType>());
    Value s =
        Float8ScaleOp::create(b, loc, f32, amax, TypeAttr::get(f8),
                              how.powerOf2 ? b.getUnitAttr() : UnitAttr());
    Value q = QuantizeOp::create(b, loc, type.clone(f8), v, s);
    return {q, s};
  }

  /// The op's GEMM `form` on its two operands, cast as `lhsCast` and
  /// `rhsCast` say (the left one first).
  Value gemm(StringRef form, Cast lhsCast, Cast rhsCast) {
    Scaled lhs = scale(op->getOperand(0), 0, lhsCast);
    Scaled rhs = scale(op->getOperand(1), 1, rhsCast);
    return ScaledMatmulOp::create(b, op->getLoc(), op->getResult(0).getType(),
                                  lhs.value, lhs.scale, rhs.value, rhs.scale,
                                  b.getStringAttr(form));
  }

private:
  OpBuilder &b;
  Operation *op;
  SmallVector<int64_t> split;
  ArrayAttr axes;
};

constexpr Cast kE4M3 = {Scaling::Tensorwise, false, false};
constexpr Cast kE5M2 = {Scaling::Tensorwise, true, false};

Value expand(OpBuilder &b, Float8LinearOp op) {
  Float8Expander e(b, op);
  if (op.getRecipe() == "tensorwise")
    return e.gemm("linear", kE4M3, kE4M3);
  // rowwise, rowwise_with_gw_hp: one scale per row along K for both.
  Cast rows = {Scaling::Rows, false, true};
  return e.gemm("linear", rows, rows);
}

Value expand(OpBuilder &b, Float8LinearGradInputOp op) {
  Float8Expander e(b, op);
  StringRef recipe = op.getRecipe();
  if (recipe == "tensorwise")
    return e.gemm("grad_input", kE5M2, kE4M3);
  // dY per row (along N); W per column along N (rowwise) or one scale
  // (rowwise_with_gw_hp).
  Cast rows = {Scaling::Rows, false, true};
  Cast weight = recipe == "rowwise" ? Cast{Scaling::Columns, false, true}
                                    : Cast{Scaling::Tensorwise, false, true};
  return e.gemm("grad_input", rows, weight);
}

Value expand(OpBuilder &b, Float8LinearGradWeightOp op) {
  StringRef recipe = op.getRecipe();
  if (recipe == "rowwise_with_gw_hp")
    return LinearGradWeightOp::create(b, op.getLoc(), op.getType(),
                                      op.getGrad(), op.getInput());
  Float8Expander e(b, op);
  if (recipe == "tensorwise")
    return e.gemm("grad_weight", kE5M2, kE4M3);
  // Both per column, along the tokens.
  Cast columns = {Scaling::Columns, false, true};
  return e.gemm("grad_weight", columns, columns);
}

struct TitanExpandFloat8Pass
    : titan::impl::TitanExpandFloat8Base<TitanExpandFloat8Pass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<Float8LinearOp, Float8LinearGradInputOp,
              Float8LinearGradWeightOp>(op))
        ops.push_back(op);
    });
    OpBuilder b(&getContext());
    for (Operation *op : ops) {
      b.setInsertionPoint(op);
      Value result;
      if (auto linear = dyn_cast<Float8LinearOp>(op))
        result = expand(b, linear);
      else if (auto gradInput = dyn_cast<Float8LinearGradInputOp>(op))
        result = expand(b, gradInput);
      else
        result = expand(b, cast<Float8LinearGradWeightOp>(op));
      op->getResult(0).replaceAllUsesWith(result);
      op->erase();
    }
  }
};

} // namespace
