//===- DecomposeSwiGLU.cpp - split titan.swiglu into its pieces -----------===//

#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace titan {
#define GEN_PASS_DEF_TITANDECOMPOSESWIGLU
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {
struct DecomposeSwiGLUPattern : OpRewritePattern<SwiGLUOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(SwiGLUOp op,
                                PatternRewriter &rewriter) const override {
    Value silu =
        SiLUOp::create(rewriter, op.getLoc(), op.getType(), op.getGate());
    rewriter.replaceOpWithNewOp<MulOp>(op, silu, op.getUp());
    return success();
  }
};

struct TitanDecomposeSwiGLUPass
    : titan::impl::TitanDecomposeSwiGLUBase<TitanDecomposeSwiGLUPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<DecomposeSwiGLUPattern>(&getContext());
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};
} // namespace
