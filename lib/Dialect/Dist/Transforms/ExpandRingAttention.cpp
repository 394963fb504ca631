//===- ExpandRingAttention.cpp - context-parallel attention's steps -------===//
//
// dist.ring_attention and its gradient as collectives and block kernels.
// The blocks' positions are the kernels' business (dist.context_attention
// knows the load-balanced layout); this pass only orders the exchanges so
// that each transfer is in flight while the previous block computes.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/IR/Builders.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTEXPANDRINGATTENTION
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

/// Builds the expansion of one ring op at its position.
class RingExpander {
public:
  RingExpander(Operation *op, ArrayAttr axes)
      : b(op), loc(op->getLoc()), axes(axes),
        degree(getGroupSize(getMesh(op), axes)) {}

  /// `v` gathered over the cp ranks along the sequence, in rank order.
  Value gather(Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(t.getShape());
    shape[1] *= degree;
    return createCollective<AllGatherStartOp>(
        b, loc, RankedTensorType::get(shape, t.getElementType()), v, axes,
        b.getI64IntegerAttr(1));
  }
  Value scatter(Value v) {
    auto t = cast<RankedTensorType>(v.getType());
    SmallVector<int64_t> shape(t.getShape());
    shape[1] /= degree;
    return createCollective<ReduceScatterStartOp>(
        b, loc, RankedTensorType::get(shape, t.getElementType()), v, axes,
        b.getI64IntegerAttr(1));
  }
  /// Starts passing `v` one rank along the ring.
  Value startShift(Value v) {
    return SendRecvStartOp::create(
        b, loc, FutureType::get(b.getContext(), tensorTypeOf(v)), v, axes,
        b.getI64IntegerAttr(1));
  }
  Value wait(Value future) { return WaitOp::create(b, loc, future); }
  Value add(Value acc, Value term) {
    return acc ? AddOp::create(b, loc, acc, term).getResult() : term;
  }

  SmallVector<Value> forward(RingAttentionOp op) {
    Value q = op.getQuery();
    Type outType = op.getResult().getType(), lseType = op.getLse().getType();
    if (op.getRotate() == RotateMethod::AllGather) {
      Value keys = gather(op.getKey());
      Value values = gather(op.getValue());
      auto block = ContextAttentionOp::create(
          b, loc, outType, lseType, q, keys, values, op.getDocumentStarts(),
          axes, b.getI64IntegerAttr(-1), op.getScaleAttr());
      return {block.getResult(), block.getLse()};
    }
    Value k = op.getKey(), v = op.getValue(), out, lse;
    for (int64_t step = 0; step < degree; ++step) {
      bool more = step + 1 < degree;
      Value nextK = more ? startShift(k) : Value();
      Value nextV = more ? startShift(v) : Value();
      auto block = ContextAttentionOp::create(
          b, loc, outType, lseType, q, k, v, op.getDocumentStarts(), axes,
          b.getI64IntegerAttr(step), op.getScaleAttr());
      if (step == 0) {
        out = block.getResult();
        lse = block.getLse();
      } else {
        auto merged =
            AttentionMergeOp::create(b, loc, out.getType(), lse.getType(), out,
                                     lse, block.getResult(), block.getLse());
        out = merged.getResult();
        lse = merged.getResultLse();
      }
      if (more) {
        k = wait(nextK);
        v = wait(nextV);
      }
    }
    return {out, lse};
  }

  SmallVector<Value> backward(RingAttentionGradOp op) {
    Value q = op.getQuery();
    auto gradOf = [&](Value k, Value v, int64_t shift) {
      return ContextAttentionGradOp::create(
          b, loc, q.getType(), k.getType(), v.getType(), q, k, v, op.getOut(),
          op.getLse(), op.getGrad(), op.getDocumentStarts(), axes,
          b.getI64IntegerAttr(shift), op.getScaleAttr());
    };
    if (op.getRotate() == RotateMethod::AllGather) {
      Value keys = gather(op.getKey());
      Value values = gather(op.getValue());
      auto grads = gradOf(keys, values, -1);
      Value keyGrad = scatter(grads.getKeyGrad());
      Value valueGrad = scatter(grads.getValueGrad());
      return {grads.getQueryGrad(), keyGrad, valueGrad};
    }
    // The keys' and values' gradients travel with their block and, after
    // the last step, one more step brings them home.
    Value k = op.getKey(), v = op.getValue(), dq, dk, dv, dkSent, dvSent;
    for (int64_t step = 0; step < degree; ++step) {
      bool more = step + 1 < degree;
      Value nextK = more ? startShift(k) : Value();
      Value nextV = more ? startShift(v) : Value();
      auto grads = gradOf(k, v, step);
      dq = add(dq, grads.getQueryGrad());
      Value dkArrived = dkSent ? wait(dkSent) : Value();
      Value dvArrived = dvSent ? wait(dvSent) : Value();
      dk = add(dkArrived, grads.getKeyGrad());
      dv = add(dvArrived, grads.getValueGrad());
      dkSent = startShift(dk);
      dvSent = startShift(dv);
      if (more) {
        k = wait(nextK);
        v = wait(nextV);
      }
    }
    Value keyGrad = wait(dkSent);
    Value valueGrad = wait(dvSent);
    return {dq, keyGrad, valueGrad};
  }

private:
  OpBuilder b;
  Location loc;
  ArrayAttr axes;
  int64_t degree;
};

struct DistExpandRingAttentionPass
    : titan::dist::impl::DistExpandRingAttentionBase<
          DistExpandRingAttentionPass> {
  void runOnOperation() override {
    SmallVector<Operation *> rings;
    getOperation().walk([&](Operation *op) {
      if (isa<RingAttentionOp, RingAttentionGradOp>(op))
        rings.push_back(op);
    });
    for (Operation *op : rings) {
      SmallVector<Value> values;
      if (auto fwd = dyn_cast<RingAttentionOp>(op))
        values = RingExpander(op, fwd.getAxes()).forward(fwd);
      else {
        auto bwd = cast<RingAttentionGradOp>(op);
        values = RingExpander(op, bwd.getAxes()).backward(bwd);
      }
      op->replaceAllUsesWith(values);
      op->erase();
    }
  }
};
} // namespace
