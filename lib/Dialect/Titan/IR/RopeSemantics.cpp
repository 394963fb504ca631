//===- RopeSemantics.cpp - titan.rope's scalar body -----------------------===//
//
// One element of the rotary embedding (TitanOps.td's formula), from the
// elements it reads: itself, its pair partner, and the cos and sin of its
// position and pair. The generated kernels are the only implementation.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/PointwiseInterface.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace titan;

SmallVector<std::pair<unsigned, AffineMap>>
RopeOp::getElementReads(MLIRContext *ctx, ArrayRef<Attribute> params,
                        CallShapes shapes) {
  ArrayRef<ArrayRef<int64_t>> operandShapes = shapes.operands;
  if (operandShapes.size() != 2 || operandShapes[0].size() != 4 ||
      operandShapes[1].size() != 3)
    return {};
  int64_t seq = operandShapes[0][1], heads = operandShapes[0][2],
          headDim = operandShapes[0][3];
  if (headDim % 2 != 0 || operandShapes[1][0] != seq ||
      operandShapes[1][1] * 2 != headDim || heads < 1)
    return {};
  AffineExpr i = getAffineDimExpr(0, ctx);
  // Element i of x is element (i mod Dh) of position (i / (H Dh)) mod S; its
  // partner is i + 1 or i - 1 (written so that interval bounds stay inside
  // x), the pair's cos at freqs_cis[s][(i mod Dh) / 2][0] and sin next to it.
  AffineExpr partner = i.floorDiv(2) * 2 + 1 - i % 2;
  AffineExpr cosine = i.floorDiv(heads * headDim) % seq * headDim +
                      (i % headDim).floorDiv(2) * 2;
  auto map = [&](AffineExpr e) { return AffineMap::get(1, 0, e); };
  return {
      {0, map(i)}, {0, map(partner)}, {1, map(cosine)}, {1, map(cosine + 1)}};
}

SmallVector<Value> RopeOp::buildScalar(OpBuilder &, Location, ValueRange,
                                       ArrayRef<Attribute>) {
  // An element alone does not say its rotation (buildIndexedScalar does).
  return {};
}

/// With (a, b) the pair, (c, s) its rotation: the even element a c - b s,
/// the odd one a s + b c. At element x with partner p both are x c + p s',
/// s' = -s at the even element (x c - p s and p s + x c round as those do).
/// The transposed rotation negates s.
SmallVector<Value> RopeOp::buildIndexedScalar(OpBuilder &b, Location loc,
                                              ValueRange reads, Value index,
                                              ArrayRef<Attribute> params,
                                              CallShapes) {
  if (reads.size() != 4 || params.size() != 1)
    return {};
  Value x = reads[0], partner = reads[1], c = reads[2], s = reads[3];
  if (cast<IntegerAttr>(params[0]).getInt() != 0)
    s = arith::NegFOp::create(b, loc, s);
  Value one = arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(1));
  Value odd = arith::CmpIOp::create(
      b, loc, arith::CmpIPredicate::ne,
      arith::AndIOp::create(b, loc, index, one),
      arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(0)));
  Value ps = arith::MulFOp::create(b, loc, partner, s);
  Value signedPs = arith::SelectOp::create(b, loc, odd, ps,
                                           arith::NegFOp::create(b, loc, ps));
  return {arith::AddFOp::create(b, loc, arith::MulFOp::create(b, loc, x, c),
                                signedPs)};
}
