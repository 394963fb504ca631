//===- TitanOps.cpp - titan dialect ops -----------------------------------===//
//
// Verifiers name the offending operand and dimension so that a malformed
// graph (hand-written or produced by a buggy pass) is easy to diagnose.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Dialect/Titan/IR/Dtype.h"
#include "titan/Support/Format.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/ADT/STLExtras.h"

using namespace mlir;
using namespace titan;

FloatType titan::getAccumulatorType(Type element) {
  MLIRContext *ctx = element.getContext();
  if (element.isF64())
    return Float64Type::get(ctx);
  return Float32Type::get(ctx);
}

namespace {
/// Prints a static shape as "8x2048x256" ("scalar" for rank 0).
std::string formatShape(ArrayRef<int64_t> shape) {
  if (shape.empty())
    return "scalar";
  std::string s;
  llvm::raw_string_ostream os(s);
  llvm::interleave(shape, os, "x");
  return s;
}

RankedTensorType tensorType(Value v) {
  return cast<RankedTensorType>(v.getType());
}

/// Checks `v` has rank `rank`; `what` names the operand in the message.
LogicalResult verifyRank(Operation *op, Value v, StringRef what, int64_t rank,
                         StringRef meaning) {
  int64_t actual = tensorType(v).getRank();
  if (actual == rank)
    return success();
  return op->emitOpError() << what << " must be a " << rank << "-D (" << meaning
                           << ") tensor, got rank " << actual << " ("
                           << formatShape(tensorType(v).getShape()) << ")";
}

/// Checks dimension `aDim` of `a` equals dimension `bDim` of `b`.
LogicalResult verifyDimsMatch(Operation *op, Value a, StringRef aName,
                              int64_t aDim, Value b, StringRef bName,
                              int64_t bDim) {
  int64_t x = tensorType(a).getDimSize(aDim),
          y = tensorType(b).getDimSize(bDim);
  if (x == y)
    return success();
  return op->emitOpError() << aName << " dimension " << aDim << " (" << x
                           << ") must equal " << bName << " dimension " << bDim
                           << " (" << y << ")";
}

LogicalResult verifySameElementType(Operation *op, Value a, StringRef aName,
                                    Value b, StringRef bName) {
  Type x = tensorType(a).getElementType(), y = tensorType(b).getElementType();
  if (x == y)
    return success();
  return op->emitOpError() << aName << " element type " << x << " must equal "
                           << bName << " element type " << y;
}

/// Checks the result has exactly the input's type (same shape and dtype).
LogicalResult verifyResultLikeInput(Operation *op, Value input,
                                    StringRef inputName) {
  Value result = op->getResult(0);
  if (result.getType() == input.getType())
    return success();
  return op->emitOpError() << "result type " << result.getType()
                           << " must equal " << inputName << " type "
                           << input.getType();
}

LogicalResult verifyPositive(Operation *op, StringRef attrName, double value) {
  if (value > 0.0)
    return success();
  return op->emitOpError() << "attribute '" << attrName
                           << "' must be positive, got " << formatNumber(value);
}
/// Checks `a` and `b` have one type.
LogicalResult verifySameType(Operation *op, Value a, StringRef aName, Value b,
                             StringRef bName) {
  if (a.getType() == b.getType())
    return success();
  return op->emitOpError() << aName << " type " << a.getType() << " must equal "
                           << bName << " type " << b.getType();
}

/// Checks `rows` has the leading shape of `logits` (`... x V` -> `...`).
LogicalResult verifyPerRow(Operation *op, Value logits, StringRef logitsName,
                           Value rows, StringRef rowsName) {
  RankedTensorType l = tensorType(logits), r = tensorType(rows);
  if (l.getRank() < 1)
    return op->emitOpError() << logitsName
                             << " must have rank >= 1 (... x vocab), got a "
                                "scalar";
  if (r.getRank() != l.getRank() - 1)
    return op->emitOpError()
           << rowsName << " rank " << r.getRank() << " must be " << logitsName
           << " rank - 1 (" << l.getRank() - 1 << ")";
  for (int64_t d = 0; d < r.getRank(); ++d)
    if (failed(verifyDimsMatch(op, rows, rowsName, d, logits, logitsName, d)))
      return failure();
  return success();
}
} // namespace

//===----------------------------------------------------------------------===//
// EmbeddingOp
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, getWeight(), "weight", 2, "vocab x dim")))
    return failure();
  RankedTensorType tokens = tensorType(getTokens());
  RankedTensorType result = getResult().getType();
  if (result.getRank() != tokens.getRank() + 1)
    return emitOpError() << "result rank " << result.getRank()
                         << " must be tokens rank + 1 (" << tokens.getRank() + 1
                         << ")";
  for (int64_t d = 0; d < tokens.getRank(); ++d)
    if (failed(verifyDimsMatch(op, getResult(), "result", d, getTokens(),
                               "tokens", d)))
      return failure();
  if (failed(verifyDimsMatch(op, getResult(), "result", result.getRank() - 1,
                             getWeight(), "weight", 1)))
    return failure();
  return verifySameElementType(op, getResult(), "result", getWeight(),
                               "weight");
}

//===----------------------------------------------------------------------===//
// RMSNormOp
//===----------------------------------------------------------------------===//

LogicalResult RMSNormOp::verify() {
  Operation *op = getOperation();
  int64_t rank = tensorType(getInput()).getRank();
  if (rank < 1)
    return emitOpError() << "input must have rank >= 1, got a scalar";
  if (failed(verifyRank(op, getWeight(), "weight", 1, "dim")) ||
      failed(verifyDimsMatch(op, getWeight(), "weight", 0, getInput(), "input",
                             rank - 1)) ||
      failed(verifySameElementType(op, getWeight(), "weight", getInput(),
                                   "input")) ||
      failed(verifyResultLikeInput(op, getInput(), "input")))
    return failure();
  return verifyPositive(op, "eps", getEps().convertToDouble());
}

//===----------------------------------------------------------------------===//
// RopeAnglesOp
//===----------------------------------------------------------------------===//

/// The last dimension of a RoPE table holds (cos, sin).
static LogicalResult verifyCosSinPairs(Operation *op, Value table,
                                       StringRef name) {
  int64_t last = tensorType(table).getDimSize(2);
  if (last != 2)
    return op->emitOpError()
           << name << " dimension 2 (" << last << ") must be 2 (cos, sin)";
  return success();
}

LogicalResult RopeAnglesOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, getResult(), "result", 3,
                        "positions x head_dim/2 x 2")) ||
      failed(verifyCosSinPairs(op, getResult(), "result")))
    return failure();
  if (failed(verifyPositive(op, "theta", getTheta().convertToDouble())))
    return failure();
  int present = getScalingFactor().has_value() +
                getLowFreqFactor().has_value() +
                getHighFreqFactor().has_value() +
                getOriginalMaxPositionEmbeddings().has_value();
  if (present != 0 && present != 4)
    return emitOpError()
           << "RoPE scaling needs all of 'scaling_factor', 'low_freq_factor', "
              "'high_freq_factor' and 'original_max_position_embeddings', or "
              "none; got "
           << present << " of 4";
  if (present == 0)
    return success();
  double factor = getScalingFactor()->convertToDouble();
  double low = getLowFreqFactor()->convertToDouble();
  double high = getHighFreqFactor()->convertToDouble();
  if (failed(verifyPositive(op, "scaling_factor", factor)) ||
      failed(verifyPositive(op, "low_freq_factor", low)))
    return failure();
  if (!(high > low))
    return emitOpError() << "attribute 'high_freq_factor' ("
                         << formatNumber(high)
                         << ") must be greater than 'low_freq_factor' ("
                         << formatNumber(low) << ")";
  return verifyPositive(
      op, "original_max_position_embeddings",
      static_cast<double>(*getOriginalMaxPositionEmbeddings()));
}

//===----------------------------------------------------------------------===//
// RopeOp
//===----------------------------------------------------------------------===//

LogicalResult RopeOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyRank(op, getInput(), "input", 4,
                        "batch x seq x heads x head_dim")) ||
      failed(verifyRank(op, getFreqsCis(), "freqs_cis", 3,
                        "seq x head_dim/2 x 2")) ||
      failed(verifyCosSinPairs(op, getFreqsCis(), "freqs_cis")))
    return failure();
  int64_t headDim = tensorType(getInput()).getDimSize(3);
  if (headDim % 2 != 0)
    return emitOpError() << "input dimension 3 (head_dim = " << headDim
                         << ") must be even to form rotation pairs";
  if (failed(verifyDimsMatch(op, getFreqsCis(), "freqs_cis", 0, getInput(),
                             "input", 1)))
    return failure();
  int64_t pairs = tensorType(getFreqsCis()).getDimSize(1);
  if (pairs != headDim / 2)
    return emitOpError() << "freqs_cis dimension 1 (" << pairs
                         << ") must equal input dimension 3 / 2 ("
                         << headDim / 2 << ")";
  return verifyResultLikeInput(op, getInput(), "input");
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

/// Shapes, head grouping and element types of attention operands, shared by
/// the op and its gradient.
static LogicalResult verifyAttentionOperands(Operation *op, Value query,
                                             Value key, Value value,
                                             double scale) {
  StringRef layout = "batch x seq x heads x head_dim";
  if (failed(verifyRank(op, query, "query", 4, layout)) ||
      failed(verifyRank(op, key, "key", 4, layout)) ||
      failed(verifyRank(op, value, "value", 4, layout)))
    return failure();
  for (int64_t d = 0; d < 4; ++d)
    if (failed(verifyDimsMatch(op, value, "value", d, key, "key", d)))
      return failure();
  for (int64_t d : {0, 1, 3})
    if (failed(verifyDimsMatch(op, key, "key", d, query, "query", d)))
      return failure();
  int64_t qHeads = tensorType(query).getDimSize(2);
  int64_t kvHeads = tensorType(key).getDimSize(2);
  if (kvHeads == 0 || qHeads % kvHeads != 0)
    return op->emitOpError() << "query heads (dimension 2 = " << qHeads
                             << ") must be a multiple of key/value heads "
                                "(dimension 2 = "
                             << kvHeads << ")";
  if (failed(verifySameElementType(op, key, "key", query, "query")) ||
      failed(verifySameElementType(op, value, "value", query, "query")))
    return failure();
  return verifyPositive(op, "scale", scale);
}

LogicalResult titan::verifyDocumentStarts(Operation *op, Value query,
                                          Value starts, int64_t positions) {
  if (!starts)
    return success();
  RankedTensorType q = tensorType(query), s = tensorType(starts);
  SmallVector<int64_t> shape = {q.getDimSize(0), positions};
  if (s.getShape() != ArrayRef<int64_t>(shape) ||
      !s.getElementType().isInteger(32))
    return op->emitOpError()
           << "document_starts must be "
           << RankedTensorType::get(shape,
                                    IntegerType::get(op->getContext(), 32))
           << " (batch x the whole sequence, each position's document "
              "start), not "
           << starts.getType();
  return success();
}

/// `lse` is B x Hq x S in the accumulator type of `query` (f64 for f64,
/// else f32).
static LogicalResult verifyLogSumExp(Operation *op, Value query, Value lse) {
  RankedTensorType q = tensorType(query), l = tensorType(lse);
  Type accumulator = getAccumulatorType(q.getElementType());
  SmallVector<int64_t> shape = {q.getDimSize(0), q.getDimSize(2),
                                q.getDimSize(1)};
  if (l.getShape() != ArrayRef<int64_t>(shape) ||
      l.getElementType() != accumulator)
    return op->emitOpError()
           << "lse must be " << RankedTensorType::get(shape, accumulator)
           << " (batch x query heads x seq, in the accumulator type), not "
           << lse.getType();
  return success();
}

LogicalResult AttentionOp::verify() {
  if (failed(verifyAttentionOperands(getOperation(), getQuery(), getKey(),
                                     getValue(), getScale().convertToDouble())))
    return failure();
  if (failed(verifyLogSumExp(getOperation(), getQuery(), getLse())) ||
      failed(verifyDocumentStarts(getOperation(), getQuery(),
                                  getDocumentStarts(),
                                  tensorType(getQuery()).getDimSize(1))))
    return failure();
  return verifyResultLikeInput(getOperation(), getQuery(), "query");
}

//===----------------------------------------------------------------------===//
// LinearOp
//===----------------------------------------------------------------------===//

/// `x` (rank >= 1) against an `out x in` weight whose dimension `weightDim`
/// must equal the last dimension of `x`: the shared operand checks of linear
/// and its input gradient.
static LogicalResult verifyAgainstWeight(Operation *op, Value x,
                                         StringRef xName, Value weight,
                                         int64_t weightDim) {
  int64_t rank = tensorType(x).getRank();
  if (rank < 1)
    return op->emitOpError() << xName << " must have rank >= 1, got a scalar";
  if (failed(verifyRank(op, weight, "weight", 2, "out x in")))
    return failure();
  return verifyDimsMatch(op, weight, "weight", weightDim, x, xName, rank - 1);
}

/// The element types the precision model computes with.
static bool isComputeType(Type t) {
  return t.isF64() || t.isF32() || t.isBF16() || t.isF16();
}

LogicalResult CastOp::verify() {
  auto in = getInput().getType(), out = getResult().getType();
  if (in.getShape() != out.getShape())
    return emitOpError() << "result shape " << formatShape(out.getShape())
                         << " must equal the input shape "
                         << formatShape(in.getShape());
  for (Type t : {in.getElementType(), out.getElementType()})
    if (!isComputeType(t) && !isFloat8Type(t))
      return emitOpError() << "casts between f64, f32, bf16, f16, f8E4M3FN and "
                              "f8E5M2, got "
                           << t;
  return success();
}

OpFoldResult CastOp::fold(FoldAdaptor) {
  // A cast to the same type is the identity.
  if (getInput().getType() == getType())
    return getInput();
  return {};
}

LogicalResult LinearOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyAgainstWeight(op, getInput(), "input", getWeight(), 1)))
    return failure();
  RankedTensorType input = tensorType(getInput());
  int64_t last = input.getRank() - 1;
  RankedTensorType result = getResult().getType();
  if (result.getRank() != input.getRank())
    return emitOpError() << "result rank " << result.getRank()
                         << " must equal input rank " << input.getRank();
  for (int64_t d = 0; d < last; ++d)
    if (failed(verifyDimsMatch(op, getResult(), "result", d, getInput(),
                               "input", d)))
      return failure();
  if (failed(verifyDimsMatch(op, getResult(), "result", last, getWeight(),
                             "weight", 0)) ||
      failed(verifySameElementType(op, getWeight(), "weight", getInput(),
                                   "input")))
    return failure();
  // Float8 operands give a wider result (the GEMM accumulates in f32).
  Type operand = input.getElementType(), out = result.getElementType();
  if (isFloat8Type(operand)) {
    if (!out.isF32() && !out.isBF16() && !out.isF16())
      return emitOpError() << "with " << operand
                           << " operands must produce f32, bf16 or f16, got "
                           << out;
    return success();
  }
  return verifySameElementType(op, getResult(), "result", getInput(), "input");
}

//===----------------------------------------------------------------------===//
// MulOp
//===----------------------------------------------------------------------===//

namespace {
/// mul(silu(a), b) -> swiglu(a, b): one fused pass over memory instead of two.
/// Only when the silu has no other user, so no work is duplicated.
struct FuseSiLUMulIntoSwiGLU : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp mul,
                                PatternRewriter &rewriter) const override {
    for (auto [gateOperand, up] : {std::pair(mul.getLhs(), mul.getRhs()),
                                   std::pair(mul.getRhs(), mul.getLhs())}) {
      auto silu = gateOperand.getDefiningOp<SiLUOp>();
      if (!silu || !silu->hasOneUse())
        continue;
      rewriter.replaceOpWithNewOp<SwiGLUOp>(mul, silu.getInput(), up);
      return success();
    }
    return failure();
  }
};
} // namespace

void MulOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                        MLIRContext *context) {
  results.add<FuseSiLUMulIntoSwiGLU>(context);
}

//===----------------------------------------------------------------------===//
// ReshapeOp
//===----------------------------------------------------------------------===//

/// A box of `whole` at `offsets` with the shape of `box`: same rank and
/// element type, inside it.
static LogicalResult verifyBox(Operation *op, Value whole, Value box,
                               ArrayRef<int64_t> offsets, StringRef boxName) {
  RankedTensorType w = tensorType(whole), p = tensorType(box);
  if (w.getRank() != p.getRank() || int64_t(offsets.size()) != w.getRank())
    return op->emitOpError() << "needs one offset per dimension and a "
                             << boxName << " of the rank of " << w << ", got "
                             << offsets.size() << " offsets and " << p;
  for (int64_t d = 0; d < w.getRank(); ++d)
    if (offsets[d] < 0 || offsets[d] + p.getDimSize(d) > w.getDimSize(d)) {
      InFlightDiagnostic diag = op->emitOpError()
                                << "box " << formatShape(p.getShape())
                                << " at offsets [";
      llvm::interleaveComma(offsets, diag);
      return diag << "] is not inside " << formatShape(w.getShape())
                  << " (dimension " << d << ")";
    }
  return verifySameElementType(op, box, boxName, whole, "whole tensor");
}

LogicalResult SliceOp::verify() {
  return verifyBox(*this, getInput(), getResult(), getOffsets(), "result");
}

LogicalResult SliceGradOp::verify() {
  return verifyBox(*this, getResult(), getGrad(), getOffsets(), "gradient");
}

std::optional<int64_t> SliceOp::getContiguousOffset() {
  ArrayRef<int64_t> in = tensorType(getInput()).getShape();
  ArrayRef<int64_t> out = getResult().getType().getShape();
  // The first dimension (from the outermost) where the box is not whole
  // bounds it: all before must be 1 in the box, all after whole.
  int64_t split = 0;
  while (split < int64_t(in.size()) && out[split] == 1 && in[split] != 1)
    ++split;
  for (int64_t d = split + 1; d < int64_t(in.size()); ++d)
    if (out[d] != in[d])
      return std::nullopt;
  int64_t offset = 0, stride = 1;
  for (int64_t d = int64_t(in.size()) - 1; d >= 0; --d) {
    offset += getOffsets()[d] * stride;
    stride *= in[d];
  }
  return offset;
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  RankedTensorType result = getResult().getType();
  int64_t dim = getDim();
  if (dim < 0 || dim >= result.getRank())
    return emitOpError() << "dim " << dim << " is not a dimension of "
                         << result;
  int64_t total = 0;
  for (Value input : getInputs()) {
    RankedTensorType t = tensorType(input);
    if (t.getRank() != result.getRank() ||
        t.getElementType() != result.getElementType())
      return emitOpError() << "input " << t << " does not match result "
                           << result << " in rank and element type";
    for (int64_t d = 0; d < t.getRank(); ++d)
      if (d != dim && t.getDimSize(d) != result.getDimSize(d))
        return emitOpError() << "input " << t << " differs from result "
                             << result << " in dimension " << d
                             << ", which is not the concatenated one";
    total += t.getDimSize(dim);
  }
  if (total != result.getDimSize(dim))
    return emitOpError() << "inputs add up to " << total << " along dim " << dim
                         << ", not the result's " << result.getDimSize(dim);
  return success();
}

LogicalResult ReshapeOp::verify() {
  RankedTensorType input = tensorType(getInput());
  RankedTensorType result = getResult().getType();
  if (input.getNumElements() != result.getNumElements())
    return emitOpError() << "result shape " << formatShape(result.getShape())
                         << " has " << result.getNumElements()
                         << " elements but input shape "
                         << formatShape(input.getShape()) << " has "
                         << input.getNumElements();
  return verifySameElementType(getOperation(), getResult(), "result",
                               getInput(), "input");
}

OpFoldResult ReshapeOp::fold(FoldAdaptor) {
  if (getInput().getType() == getType())
    return getInput();
  // reshape(reshape(x)) == reshape(x): row-major order is preserved.
  if (auto producer = getInput().getDefiningOp<ReshapeOp>()) {
    getInputMutable().assign(producer.getInput());
    return getResult();
  }
  return {};
}

//===----------------------------------------------------------------------===//
// CrossEntropyOp
//===----------------------------------------------------------------------===//

/// `lse` is a per-row statistic of `logits` in their accumulator type.
static LogicalResult verifyRowLogSumExp(Operation *op, Value logits,
                                        Value lse) {
  if (failed(verifyPerRow(op, logits, "logits", lse, "lse")))
    return failure();
  Type element = tensorType(lse).getElementType();
  Type accumulator = getAccumulatorType(tensorType(logits).getElementType());
  if (element != accumulator)
    return op->emitOpError()
           << "lse element type must be " << accumulator
           << " (the accumulator type of the logits), not " << element;
  return success();
}

LogicalResult CrossEntropyOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyPerRow(op, getLogits(), "logits", getLabels(), "labels")))
    return failure();
  return verifyRowLogSumExp(op, getLogits(), getLse());
}

//===----------------------------------------------------------------------===//
// Cross-entropy in pieces
//===----------------------------------------------------------------------===//

/// A per-row statistic of `logits`: its leading shape and element type.
static LogicalResult verifyRowStatistic(Operation *op, Value logits,
                                        Value result) {
  if (failed(verifyPerRow(op, logits, "logits", result, "result")))
    return failure();
  return verifySameElementType(op, result, "result", logits, "logits");
}

LogicalResult RowMaxOp::verify() {
  return verifyRowStatistic(getOperation(), getLogits(), getResult());
}

LogicalResult SumExpOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyPerRow(op, getLogits(), "logits", getMax(), "max")))
    return failure();
  return verifySameType(op, getResult(), "result", getMax(), "max");
}

LogicalResult TargetLogitOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyPerRow(op, getLogits(), "logits", getLabels(), "labels")))
    return failure();
  return verifyRowStatistic(op, getLogits(), getResult());
}

LogicalResult CrossEntropyFromStatsOp::verify() {
  Operation *op = getOperation();
  if (failed(verifySameType(op, getSumExp(), "sum_exp", getMax(), "max")))
    return failure();
  return verifySameType(op, getTarget(), "target", getMax(), "max");
}

//===----------------------------------------------------------------------===//
// Gradient ops
//===----------------------------------------------------------------------===//

LogicalResult SumExpGradOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyPerRow(op, getLogits(), "logits", getMax(), "max")) ||
      failed(verifySameType(op, getGrad(), "grad", getMax(), "max")))
    return failure();
  return verifyResultLikeInput(op, getLogits(), "logits");
}

LogicalResult TargetLogitGradOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyPerRow(op, getResult(), "result", getLabels(), "labels")) ||
      failed(verifyPerRow(op, getResult(), "result", getGrad(), "grad")))
    return failure();
  return verifySameElementType(op, getResult(), "result", getGrad(), "grad");
}

LogicalResult CrossEntropyFromStatsGradOp::verify() {
  for (Value r : getResults())
    if (failed(verifySameType(getOperation(), r, "result", getSumExp(),
                              "sum_exp")))
      return failure();
  return success();
}

LogicalResult EmbeddingGradOp::verify() {
  Operation *op = getOperation();
  RankedTensorType grad = tensorType(getGrad());
  RankedTensorType tokens = tensorType(getTokens());
  if (failed(verifyRank(op, getResult(), "result", 2, "vocab x dim")))
    return failure();
  if (grad.getRank() != tokens.getRank() + 1)
    return emitOpError() << "grad rank " << grad.getRank()
                         << " must be tokens rank + 1 (" << tokens.getRank() + 1
                         << ")";
  for (int64_t d = 0; d < tokens.getRank(); ++d)
    if (failed(verifyDimsMatch(op, getGrad(), "grad", d, getTokens(), "tokens",
                               d)))
      return failure();
  if (failed(verifyDimsMatch(op, getResult(), "result", 1, getGrad(), "grad",
                             grad.getRank() - 1)))
    return failure();
  return verifySameElementType(op, getResult(), "result", getGrad(), "grad");
}

LogicalResult RMSNormGradOp::verify() {
  Operation *op = getOperation();
  int64_t rank = tensorType(getInput()).getRank();
  if (rank < 1)
    return emitOpError() << "input must have rank >= 1, got a scalar";
  if (failed(verifyRank(op, getWeight(), "weight", 1, "dim")) ||
      failed(verifyDimsMatch(op, getWeight(), "weight", 0, getInput(), "input",
                             rank - 1)) ||
      failed(verifySameElementType(op, getWeight(), "weight", getInput(),
                                   "input")))
    return failure();
  if (getGrad().getType() != getInput().getType())
    return emitOpError() << "grad type " << getGrad().getType()
                         << " must equal input type " << getInput().getType();
  if (getInputGrad().getType() != getInput().getType() ||
      getWeightGrad().getType() != getWeight().getType())
    return emitOpError()
           << "result types must equal the input and weight types";
  return verifyPositive(op, "eps", getEps().convertToDouble());
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyAttentionOperands(getOperation(), getQuery(), getKey(),
                                     getValue(), getScale().convertToDouble())))
    return failure();
  if (getGrad().getType() != getQuery().getType())
    return emitOpError() << "grad type " << getGrad().getType()
                         << " must equal query type " << getQuery().getType();
  if (getOut().getType() != getQuery().getType())
    return emitOpError() << "out type " << getOut().getType()
                         << " must equal query type " << getQuery().getType();
  if (failed(verifyLogSumExp(getOperation(), getQuery(), getLse())) ||
      failed(verifyDocumentStarts(getOperation(), getQuery(),
                                  getDocumentStarts(),
                                  tensorType(getQuery()).getDimSize(1))))
    return failure();
  if (getQueryGrad().getType() != getQuery().getType() ||
      getKeyGrad().getType() != getKey().getType() ||
      getValueGrad().getType() != getValue().getType())
    return emitOpError()
           << "result types must equal the query, key and value types";
  return success();
}

LogicalResult LinearGradInputOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyAgainstWeight(op, getGrad(), "grad", getWeight(), 0)))
    return failure();
  RankedTensorType grad = tensorType(getGrad());
  SmallVector<int64_t> expected(grad.getShape());
  expected.back() = tensorType(getWeight()).getDimSize(1);
  auto expectedType =
      RankedTensorType::get(expected, tensorType(getWeight()).getElementType());
  if (getResult().getType() != expectedType)
    return emitOpError() << "result type " << getResult().getType()
                         << " must be " << expectedType;
  return verifySameElementType(op, getGrad(), "grad", getWeight(), "weight");
}

LogicalResult LinearGradWeightOp::verify() {
  Operation *op = getOperation();
  RankedTensorType grad = tensorType(getGrad());
  RankedTensorType input = tensorType(getInput());
  if (grad.getRank() < 1 || grad.getRank() != input.getRank())
    return emitOpError() << "grad and input must have the same rank >= 1";
  for (int64_t d = 0; d + 1 < grad.getRank(); ++d)
    if (failed(
            verifyDimsMatch(op, getGrad(), "grad", d, getInput(), "input", d)))
      return failure();
  RankedTensorType result = getResult().getType();
  SmallVector<int64_t> expected = {grad.getShape().back(),
                                   input.getShape().back()};
  if (result.getShape() != ArrayRef<int64_t>(expected))
    return emitOpError() << "result shape " << formatShape(result.getShape())
                         << " must be " << formatShape(expected);
  if (failed(verifySameElementType(op, getGrad(), "grad", getInput(), "input")))
    return failure();
  // The f32 sum rounded once to the operands' type, or kept (16-bit
  // operands).
  Type operand = input.getElementType(), out = result.getElementType();
  if (out != operand && !(out.isF32() && (operand.isBF16() || operand.isF16())))
    return emitOpError() << "result element type " << out << " must be "
                         << operand
                         << (operand.isBF16() || operand.isF16() ? " or 'f32'"
                                                                 : "");
  return success();
}

LogicalResult CrossEntropyGradOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyPerRow(op, getLogits(), "logits", getLabels(), "labels")) ||
      failed(verifyRowLogSumExp(op, getLogits(), getLse())))
    return failure();
  return verifyResultLikeInput(op, getLogits(), "logits");
}

//===----------------------------------------------------------------------===//
// Optimizer ops
//===----------------------------------------------------------------------===//

LogicalResult GlobalNormOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  return success();
}

LogicalResult LRScheduleOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyPositive(op, "lr", getLr().convertToDouble())))
    return failure();
  // I64Attr reads back unsigned; check the signed value.
  if (int64_t warmup = getWarmupStepsAttr().getInt(); warmup < 0)
    return emitOpError()
           << "attribute 'warmup_steps' must be non-negative, got " << warmup;
  if (std::optional<APFloat> ratio = getDecayRatio();
      ratio && (ratio->convertToDouble() < 0 || ratio->convertToDouble() > 1))
    return emitOpError() << "attribute 'decay_ratio' must be in [0, 1], got "
                         << formatNumber(ratio->convertToDouble());
  double minLr = getMinLrFactor().convertToDouble();
  if (minLr < 0 || minLr > 1)
    return emitOpError() << "attribute 'min_lr_factor' must be in [0, 1], got "
                         << formatNumber(minLr);
  return success();
}

namespace {
/// AdamW's betas lie in [0, 1) (NaN does not).
LogicalResult verifyBetas(Operation *op, double beta1, double beta2) {
  if (!(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1))
    return op->emitOpError()
           << "betas must be in [0, 1), got (" << formatNumber(beta1) << ", "
           << formatNumber(beta2) << ")";
  return success();
}

/// A hyperparameter that must be >= 0 (NaN is not).
LogicalResult verifyNonNegative(Operation *op, StringRef name, double value) {
  if (!(value >= 0))
    return op->emitOpError()
           << name << " must be non-negative, got " << formatNumber(value);
  return success();
}
} // namespace

LogicalResult AdamWScalarsOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyBetas(op, getBeta1().convertToDouble(),
                         getBeta2().convertToDouble())) ||
      failed(verifyNonNegative(op, "weight_decay",
                               getWeightDecay().convertToDouble())))
    return failure();
  return verifyPositive(op, "max_norm", getMaxNorm().convertToDouble());
}

LogicalResult AdamWOp::verify() {
  Operation *op = getOperation();
  if (failed(verifyBetas(op, getBeta1().convertToDouble(),
                         getBeta2().convertToDouble())) ||
      failed(verifyNonNegative(op, "eps", getEps().convertToDouble())))
    return failure();
  // The step's scalars are rounded to the parameter's type.
  Type element = getParam().getType().getElementType();
  Type scalars = getClipCoef().getType().getElementType();
  if (scalars != element)
    return emitOpError() << "the step's scalars must have the parameter's "
                            "element type "
                         << element << ", got " << scalars;
  return success();
}

#define GET_OP_CLASSES
#include "titan/Dialect/Titan/IR/TitanOps.cpp.inc"
