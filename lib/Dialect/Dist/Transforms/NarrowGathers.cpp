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
#include "llvm/ADT/SmallPtrSet.h"

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
/// `wait`: the gather at `startAt` (where it was, or later), the wait
/// where it waited or, if that is before the new start, right after it.
/// Both keep the old ops' attributes (recompute regions, shardings).
Value regather(OpBuilder &b, AllGatherStartOp gather, WaitOp wait, Value shard,
               Type element, Operation *startAt) {
  b.setInsertionPoint(startAt);
  auto start = AllGatherStartOp::create(
      b, gather.getLoc(),
      FutureType::get(b.getContext(), typeOf(wait.getResult()).clone(element)),
      shard, gather.getAxesAttr(), gather.getDimAttr());
  start->setDiscardableAttrs(gather->getDiscardableAttrDictionary());
  if (wait->isBeforeInBlock(start))
    b.setInsertionPointAfter(start);
  else
    b.setInsertionPoint(wait);
  auto waited = WaitOp::create(b, wait.getLoc(), start);
  waited->setDiscardableAttrs(wait->getDiscardableAttrDictionary());
  return waited.getResult();
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
  c.replaceAllUsesWith(regather(b, gather, wait, narrow, element, gather));
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

/// Whether every op after `gather` up to `scale`'s definition (same
/// block) is the gather's `wait` or computes the scale: sequence
/// parallel's activation amax, all-reduced over tp, then its scale. Nothing
/// else runs there for the gather to overlap, so it may start after them.
bool onlyScaleAfter(AllGatherStartOp gather, WaitOp wait, Value scale) {
  Operation *def = scale.getDefiningOp();
  if (!def || def->getBlock() != gather->getBlock() ||
      !gather->isBeforeInBlock(def))
    return false;
  // The scale's operands, transitively, back to the gather.
  llvm::SmallPtrSet<Operation *, 8> computesScale{def};
  for (Operation *op = def; op != gather.getOperation();
       op = op->getPrevNode()) {
    if (!computesScale.contains(op))
      continue;
    for (Value operand : op->getOperands())
      if (Operation *producer = operand.getDefiningOp())
        computesScale.insert(producer);
  }
  for (Operation *op = gather->getNextNode(); op != def; op = op->getNextNode())
    if (op != wait.getOperation() && !computesScale.contains(op))
      return false;
  return true;
}

/// Where the shard's cast and the float8 gather go: where the gather
/// started when the scale is known there (a weight FSDP re-gathers for the
/// backward keeps its forward's scale); right after the scale when only
/// its computation runs in between (torchao's Float8ColwiseParallel casts
/// a sequence-parallel activation before gathering it); else nowhere.
Operation *float8GatherPoint(AllGatherStartOp gather, WaitOp wait,
                             Value scale) {
  if (readyAt(scale, gather))
    return gather;
  if (onlyScaleAfter(gather, wait, scale))
    return scale.getDefiningOp()->getNextNode();
  return nullptr;
}

/// quantize(wait(gather(x)), s) -> wait(gather(quantize(x, s))) where the
/// scale is known (float8GatherPoint); the transposed cast is then the
/// gathered float8 tensor transposed, the same bits.
void gatherFloat8(OpBuilder &b, WaitOp wait) {
  AllGatherStartOp gather = gatherOf(wait);
  SmallVector<QuantizeOp> casts =
      gather ? float8Casts(wait) : SmallVector<QuantizeOp>();
  if (casts.empty())
    return;
  Value scale = casts.front().getScale();
  Operation *at = float8GatherPoint(gather, wait, scale);
  if (!at)
    return;
  Type f8 = casts.front().getType().getElementType();
  b.setInsertionPoint(at);
  auto shard = QuantizeOp::create(b, casts.front().getLoc(),
                                  typeOf(gather.getInput()).clone(f8),
                                  gather.getInput(), scale);
  // The untransposed cast's attributes (its recompute region) where there
  // is one: the shard's cast takes its place.
  auto plain =
      llvm::find_if(casts, [](QuantizeOp q) { return !q.getTransposed(); });
  QuantizeOp like = plain != casts.end() ? *plain : casts.front();
  shard->setDiscardableAttrs(like->getDiscardableAttrDictionary());
  Value gathered = regather(b, gather, wait, shard, f8, at);
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
