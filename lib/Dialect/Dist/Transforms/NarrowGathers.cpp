//===- NarrowGathers.cpp - gather the narrow type -------------------------===//
//
// A narrowing elementwise op on a gathered value gives the same elements
// on the shard: FSDP then gathers fewer bytes, and each rank converts its
// shard instead of the whole tensor.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/IR/Builders.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTNARROWGATHERS
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

RankedTensorType typeOf(Value v) { return cast<RankedTensorType>(v.getType()); }

unsigned bitWidth(Type t) {
  return cast<RankedTensorType>(t).getElementTypeBitWidth();
}

/// The gather `wait` waits for, if any.
AllGatherStartOp gatherOf(WaitOp wait) {
  return wait.getFuture().getDefiningOp<AllGatherStartOp>();
}

/// wait(gather(`shard`)) gathered as `element`, replacing `gather` and
/// `wait`: the gather where it was, the wait where it waited.
Value regather(OpBuilder &b, AllGatherStartOp gather, WaitOp wait, Value shard,
               Type element) {
  b.setInsertionPoint(gather);
  auto start = AllGatherStartOp::create(
      b, gather.getLoc(),
      FutureType::get(b.getContext(), typeOf(wait.getResult()).clone(element)),
      shard, gather.getAxesAttr(), gather.getDimAttr());
  b.setInsertionPoint(wait);
  return WaitOp::create(b, wait.getLoc(), start).getResult();
}

/// cast(wait(gather(x))) -> wait(gather(cast(x))) for a narrowing cast,
/// the gathered value's only user.
void narrowCast(OpBuilder &b, CastOp c) {
  auto wait = c.getInput().getDefiningOp<WaitOp>();
  AllGatherStartOp gather = wait ? gatherOf(wait) : nullptr;
  if (!gather || !wait.getResult().hasOneUse() ||
      bitWidth(c.getType()) >= bitWidth(c.getInput().getType()))
    return;
  b.setInsertionPoint(gather);
  Type element = c.getType().getElementType();
  Value narrow =
      CastOp::create(b, c.getLoc(), typeOf(gather.getInput()).clone(element),
                     gather.getInput());
  c.replaceAllUsesWith(regather(b, gather, wait, narrow, element));
  c.erase();
  wait.erase();
  gather.erase();
}

/// Whether `v` holds its value where `op` runs (defined before it in its
/// block).
bool readyAt(Value v, Operation *op) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == op->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == op->getBlock() && def->isBeforeInBlock(op);
}

/// The float8 casts reading the gathered value, when they are all its
/// users and share one tensorwise scale and type.
SmallVector<QuantizeOp> float8Casts(WaitOp wait) {
  SmallVector<QuantizeOp> casts;
  for (Operation *user : wait->getUsers()) {
    auto q = dyn_cast<QuantizeOp>(user);
    // titan.transpose takes rank 2 and up (a rank-1 transposed cast is a
    // copy).
    if (!q || typeOf(q.getScale()).getRank() != 0 ||
        (q.getTransposed() && typeOf(q.getInput()).getRank() < 2) ||
        (!casts.empty() && (q.getScale() != casts.front().getScale() ||
                            q.getType().getElementType() !=
                                casts.front().getType().getElementType())))
      return {};
    casts.push_back(q);
  }
  return casts;
}

/// quantize(wait(gather(x)), s) -> wait(gather(quantize(x, s))) when the
/// scale is known where the gather starts (a weight FSDP re-gathers for
/// the backward keeps its forward's scale); the transposed cast is then
/// the gathered float8 weight transposed, the same bits.
void gatherFloat8(OpBuilder &b, WaitOp wait) {
  AllGatherStartOp gather = gatherOf(wait);
  SmallVector<QuantizeOp> casts =
      gather ? float8Casts(wait) : SmallVector<QuantizeOp>();
  if (casts.empty() || !readyAt(casts.front().getScale(), gather))
    return;
  Value scale = casts.front().getScale();
  Type f8 = casts.front().getType().getElementType();
  b.setInsertionPoint(gather);
  Value shard = QuantizeOp::create(b, casts.front().getLoc(),
                                   typeOf(gather.getInput()).clone(f8),
                                   gather.getInput(), scale);
  Value gathered = regather(b, gather, wait, shard, f8);
  for (QuantizeOp q : casts) {
    Value v = gathered;
    if (q.getTransposed()) {
      b.setInsertionPoint(q);
      v = TransposeOp::create(b, q.getLoc(), q.getType(), gathered);
    }
    q.replaceAllUsesWith(v);
    q.erase();
  }
  wait.erase();
  gather.erase();
}

struct DistNarrowGathersPass
    : titan::dist::impl::DistNarrowGathersBase<DistNarrowGathersPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    SmallVector<CastOp> casts;
    getOperation().walk([&](CastOp c) { casts.push_back(c); });
    for (CastOp c : casts)
      narrowCast(b, c);
    SmallVector<WaitOp> waits;
    getOperation().walk([&](WaitOp w) { waits.push_back(w); });
    for (WaitOp w : waits)
      gatherFloat8(b, w);
  }
};

} // namespace
