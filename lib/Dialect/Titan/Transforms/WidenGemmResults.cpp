//===- WidenGemmResults.cpp - GEMMs that write their widened result -------===//
//
// cast<f32>(gemm(...) : bf16)  ==>  gemm(...) : f32
// for GEMMs that accumulate in f32 (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace titan {
#define GEN_PASS_DEF_TITANWIDENGEMMRESULTS
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {
bool isSixteenBit(Type t) { return t.isBF16() || t.isF16(); }

struct WidenGemmResult : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp cast,
                                PatternRewriter &rewriter) const override {
    Operation *gemm = cast.getInput().getDefiningOp();
    if (!gemm || !gemm->hasTrait<titan::OpTrait::WidenableResult>() ||
        gemm->getNumResults() != 1 || !cast.getInput().hasOneUse())
      return failure();
    RankedTensorType wide = cast.getType();
    if (!wide.getElementType().isF32() ||
        !isSixteenBit(cast.getInput().getType().getElementType()))
      return failure();
    // The GEMM stays where it runs; the cast's users come after it.
    rewriter.modifyOpInPlace(gemm, [&] { gemm->getResult(0).setType(wide); });
    rewriter.replaceOp(cast, gemm->getResults());
    return success();
  }
};

struct TitanWidenGemmResultsPass
    : titan::impl::TitanWidenGemmResultsBase<TitanWidenGemmResultsPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<WidenGemmResult>(&getContext());
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};
} // namespace
