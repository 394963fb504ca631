//===- NarrowGathers.cpp - gather the narrow type -------------------------===//

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

unsigned bitWidth(Type t) {
  return cast<RankedTensorType>(t).getElementTypeBitWidth();
}

struct DistNarrowGathersPass
    : titan::dist::impl::DistNarrowGathersBase<DistNarrowGathersPass> {
  void runOnOperation() override {
    SmallVector<CastOp> casts;
    getOperation().walk([&](CastOp c) { casts.push_back(c); });
    OpBuilder b(&getContext());
    for (CastOp c : casts) {
      auto wait = c.getInput().getDefiningOp<WaitOp>();
      auto gather =
          wait ? wait.getFuture().getDefiningOp<AllGatherStartOp>() : nullptr;
      if (!gather || !wait.getResult().hasOneUse() ||
          bitWidth(c.getType()) >= bitWidth(c.getInput().getType()))
        continue;
      // cast(wait(gather(x))) -> wait(gather(cast(x))), at the gather.
      b.setInsertionPoint(gather);
      Type element = c.getType().getElementType();
      Value narrow = CastOp::create(
          b, c.getLoc(),
          cast<RankedTensorType>(gather.getInput().getType()).clone(element),
          gather.getInput());
      auto start = AllGatherStartOp::create(
          b, gather.getLoc(), FutureType::get(&getContext(), c.getType()),
          narrow, gather.getAxesAttr(), gather.getDimAttr());
      b.setInsertionPoint(wait);
      auto narrowWait = WaitOp::create(b, wait.getLoc(), start);
      c.replaceAllUsesWith(narrowWait.getResult());
      c.erase();
      wait.erase();
      gather.erase();
    }
  }
};

} // namespace
