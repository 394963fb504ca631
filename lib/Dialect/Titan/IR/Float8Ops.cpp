//===- Float8Ops.cpp - verifiers of the Float8 training ops ---------------===//

#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace mlir;
using namespace titan;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

/// The result shape of one of titan.linear's three GEMMs on operands of
/// shapes `lhs` and `rhs`, or an error on `op`.
FailureOr<SmallVector<int64_t>> gemmShape(Operation *op, GemmForm form,
                                          ArrayRef<int64_t> lhs,
                                          ArrayRef<int64_t> rhs) {
  if (lhs.empty())
    return op->emitOpError() << "lhs must have rank >= 1, got a scalar";
  if (form == GemmForm::GradWeight) {
    if (rhs.size() != lhs.size() ||
        !llvm::equal(lhs.drop_back(), rhs.drop_back()))
      return op->emitOpError()
             << "grad and input must have the same leading dimensions";
    return SmallVector<int64_t>{lhs.back(), rhs.back()};
  }
  bool linear = form == GemmForm::Linear;
  if (rhs.size() != 2)
    return op->emitOpError()
           << "rhs must be a 2-D (out x in) weight, got rank " << rhs.size();
  // linear reduces K (weight dim 1), grad_input N (weight dim 0).
  int64_t reduced = linear ? rhs[1] : rhs[0];
  if (lhs.back() != reduced)
    return op->emitOpError()
           << "lhs last dimension (" << lhs.back()
           << ") must equal the weight's " << (linear ? "in" : "out")
           << " features (" << reduced << ")";
  SmallVector<int64_t> shape(lhs);
  shape.back() = linear ? rhs[0] : rhs[1];
  return shape;
}

/// The checks of the three float8 GEMM ops: shapes, one compute type, and
/// `split_dims` (one per operand and the result).
LogicalResult verifyFloat8Gemm(Operation *op, GemmForm form, Value lhs,
                               Value rhs, Value result,
                               std::optional<ArrayRef<int64_t>> splitDims,
                               std::optional<ArrayAttr> splitAxes) {
  FailureOr<SmallVector<int64_t>> shape =
      gemmShape(op, form, typeOf(lhs).getShape(), typeOf(rhs).getShape());
  if (failed(shape))
    return failure();
  if (typeOf(result).getShape() != ArrayRef<int64_t>(*shape))
    return op->emitOpError()
           << "result shape must be that of the GEMM of its operands";
  Type element = typeOf(lhs).getElementType();
  if (typeOf(rhs).getElementType() != element ||
      typeOf(result).getElementType() != element)
    return op->emitOpError() << "operands and result must have one element "
                                "type (the compute type), got "
                             << typeOf(lhs).getElementType() << ", "
                             << typeOf(rhs).getElementType() << " and "
                             << typeOf(result).getElementType();
  if (!element.isF32() && !element.isBF16() && !element.isF16())
    return op->emitOpError() << "computes in f32, bf16 or f16, got " << element;
  if (splitDims.has_value() != splitAxes.has_value())
    return op->emitOpError() << "split_dims and split_axes go together";
  if (splitDims) {
    Value values[] = {lhs, rhs, result};
    if (splitDims->size() != 3)
      return op->emitOpError() << "split_dims must have 3 entries (the two "
                                  "operands and the result)";
    for (auto [d, v] : llvm::zip(*splitDims, values))
      if (d < -1 || d >= typeOf(v).getRank())
        return op->emitOpError()
               << "split_dims entry " << d << " is not a dimension (or -1)";
  }
  return success();
}

} // namespace

LogicalResult Float8LinearOp::verify() {
  return verifyFloat8Gemm(*this, GemmForm::Linear, getInput(), getWeight(),
                          getResult(), getSplitDims(), getSplitAxes());
}
LogicalResult Float8LinearGradInputOp::verify() {
  return verifyFloat8Gemm(*this, GemmForm::GradInput, getGrad(), getWeight(),
                          getResult(), getSplitDims(), getSplitAxes());
}
LogicalResult Float8LinearGradWeightOp::verify() {
  return verifyFloat8Gemm(*this, GemmForm::GradWeight, getGrad(), getInput(),
                          getResult(), getSplitDims(), getSplitAxes());
}

int64_t AmaxOp::getReduction() {
  std::optional<ArrayRef<int64_t>> dims = getDims();
  if (!dims)
    return 0;
  return dims->size() == 1 && dims->front() == typeOf(getInput()).getRank() - 1
             ? 1
             : 2;
}

LogicalResult AmaxOp::verify() {
  RankedTensorType in = typeOf(getInput()), out = getResult().getType();
  std::optional<ArrayRef<int64_t>> dims = getDims();
  if (!dims) {
    if (out.getRank() != 0)
      return emitOpError() << "over every element gives a rank-0 result";
    return success();
  }
  int64_t rank = in.getRank();
  SmallVector<int64_t> leading =
      llvm::to_vector(llvm::seq<int64_t>(0, rank - 1));
  bool last = dims->size() == 1 && dims->front() == rank - 1;
  if (rank < 2 || (!last && *dims != ArrayRef<int64_t>(leading)))
    return emitOpError()
           << "dims must be the last dimension or every dimension but the "
              "last, of an input of rank >= 2";
  SmallVector<int64_t> shape(in.getShape());
  for (int64_t d : *dims)
    shape[d] = 1;
  if (out.getShape() != ArrayRef<int64_t>(shape))
    return emitOpError() << "result must keep the reduced dimensions as size 1";
  return success();
}

LogicalResult Float8ScaleOp::verify() {
  if (!isa<Float8E4M3FNType, Float8E5M2Type>(getFloat8Type()))
    return emitOpError() << "float8_type must be f8E4M3FN or f8E5M2, got "
                         << getFloat8Type();
  return success();
}

/// A scale broadcasts against `v`: rank 0, or `v`'s rank with every
/// dimension 1 or `v`'s.
static bool broadcastsTo(RankedTensorType scale, RankedTensorType v) {
  if (scale.getRank() == 0)
    return true;
  if (scale.getRank() != v.getRank())
    return false;
  return llvm::all_of(llvm::zip(scale.getShape(), v.getShape()), [](auto p) {
    return std::get<0>(p) == 1 || std::get<0>(p) == std::get<1>(p);
  });
}

/// The shape of a tensor stored transposed (its last dimension moved
/// first, as titan.quantize {transposed} writes it) as it was before: the
/// first dimension moved last.
static SmallVector<int64_t> untransposed(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> result(shape);
  if (!result.empty())
    std::rotate(result.begin(), result.begin() + 1, result.end());
  return result;
}

LogicalResult QuantizeOp::verify() {
  RankedTensorType in = typeOf(getInput()), out = getResult().getType();
  if (!getTransposed() && in.getShape() != out.getShape())
    return emitOpError() << "result shape must equal the input's";
  if (getTransposed() &&
      in.getShape() != ArrayRef<int64_t>(untransposed(out.getShape())))
    return emitOpError() << "transposed result shape must be the input's "
                            "with its last dimension moved first";
  Type element = in.getElementType();
  if (!element.isF32() && !element.isBF16() && !element.isF16())
    return emitOpError() << "quantizes f32, bf16 or f16, got " << element;
  if (!broadcastsTo(getScale().getType(), in))
    return emitOpError() << "scale must be rank 0 or broadcast against the "
                            "input (size 1 or the input's size per dimension)";
  return success();
}

LogicalResult TransposeOp::verify() {
  RankedTensorType in = typeOf(getInput()), out = typeOf(getResult());
  if (in.getElementType() != out.getElementType())
    return emitOpError() << "result element type must equal the input's";
  if (in.getRank() < 2 ||
      in.getShape() != ArrayRef<int64_t>(untransposed(out.getShape())))
    return emitOpError() << "result shape must be the input's (rank >= 2) "
                            "with its last dimension moved first";
  return success();
}

LogicalResult ScaledMatmulOp::verify() {
  // The form reduces lhs along its last dimension except in grad_weight,
  // rhs only in linear; an operand reduced over its leading dimensions may
  // come transposed (K-major).
  GemmForm form = getForm();
  bool lhsLast = form != GemmForm::GradWeight;
  bool rhsLast = form == GemmForm::Linear;
  if ((getLhsTransposed() && lhsLast) || (getRhsTransposed() && rhsLast))
    return emitOpError()
           << (getLhsTransposed() && lhsLast ? "lhs" : "rhs")
           << " may come transposed only where the form reduces it over its "
              "leading dimensions (grad_weight's lhs, grad_input's and "
              "grad_weight's rhs)";
  SmallVector<int64_t> lhs(typeOf(getLhs()).getShape());
  SmallVector<int64_t> rhs(typeOf(getRhs()).getShape());
  if (getLhsTransposed())
    lhs = untransposed(lhs);
  if (getRhsTransposed())
    rhs = untransposed(rhs);
  FailureOr<SmallVector<int64_t>> shape = gemmShape(*this, form, lhs, rhs);
  if (failed(shape))
    return failure();
  RankedTensorType out = getResult().getType();
  if (out.getShape() != ArrayRef<int64_t>(*shape))
    return emitOpError()
           << "result shape must be that of the GEMM of its operands";
  Type element = out.getElementType();
  if (!element.isF32() && !element.isBF16() && !element.isF16())
    return emitOpError() << "produces f32, bf16 or f16, got " << element;
  // Each scale is rank 0 or the (untransposed) operand's shape with its
  // reduction dimensions set to 1.
  auto checkScale = [&](Value scale, ArrayRef<int64_t> operand, bool reduceLast,
                        StringRef name) -> LogicalResult {
    RankedTensorType s = typeOf(scale);
    if (s.getRank() == 0)
      return success();
    SmallVector<int64_t> expected(operand);
    if (reduceLast)
      expected.back() = 1;
    else
      for (size_t d = 0; d + 1 < expected.size(); ++d)
        expected[d] = 1;
    if (s.getShape() == ArrayRef<int64_t>(expected))
      return success();
    return emitOpError() << name
                         << " must be rank 0 or one scale per slice along the "
                            "GEMM's reduction dimension";
  };
  return success(
      succeeded(checkScale(getLhsScale(), lhs, lhsLast, "lhs_scale")) &&
      succeeded(checkScale(getRhsScale(), rhs, rhsLast, "rhs_scale")));
}
