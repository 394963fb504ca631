//===- ActivationCheckpoint.cpp - TorchTitan's recompute policies ---------===//
//
// Marks recompute regions (one per transformer block) and, for selective
// per-op checkpointing, the ops whose results are kept. titan-autodiff does
// the recomputing; this pass only says what the policy is.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/ModuleNames.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <set>

namespace titan {
#define GEN_PASS_DEF_TITANACTIVATIONCHECKPOINT
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {

/// Whether TorchTitan's per-op policy saves `op`'s results, before the
/// every-second-matmul rule (`_op_sac_save_list` of
/// torchtitan/models/llama3/infra/parallelize.py, v0.2.0). Float8 linears
/// (`aten._scaled_mm`) are not on it.
bool onSaveList(Operation *op) {
  if (isa<AttentionOp>(op))
    return true;
  if (auto wait = dyn_cast<dist::WaitOp>(op))
    return isa_and_nonnull<dist::ReduceScatterStartOp>(
        wait.getFuture().getDefiningOp());
  return false;
}

struct TitanActivationCheckpointPass
    : titan::impl::TitanActivationCheckpointBase<
          TitanActivationCheckpointPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (mode != "none" && mode != "selective" && mode != "full") {
      module.emitError() << "titan-activation-checkpoint: mode '" << mode
                         << "' must be none, selective or full";
      return signalPassFailure();
    }
    bool perOp = mode == "selective" && selectiveOption == "op";
    unsigned every = 1;
    if (mode == "selective" && !perOp &&
        (StringRef(selectiveOption).getAsInteger(10, every) || every == 0)) {
      module.emitError() << "titan-activation-checkpoint: selective-option '"
                         << selectiveOption
                         << "' must be op or a positive integer N (every "
                            "Nth block)";
      return signalPassFailure();
    }
    if (mode == "none")
      return;
    func::FuncOp forward =
        lookupFunction(module, forwardName, "titan-activation-checkpoint");
    if (!forward)
      return signalPassFailure();

    // The weight shapes of the linears of the modules named to be
    // recomputed (TorchTitan matches names by substring and the matmuls
    // by their weight's shape).
    std::set<std::pair<int64_t, int64_t>> forcedShapes;
    if (perOp && !forceRecomputeFqns.empty()) {
      WalkResult walk = forward.walk([&](Operation *op) {
        std::optional<StringRef> name = getModuleName(op->getLoc());
        // Parameters' gathers and casts carry the parameter's name.
        if (!name || !getLayerIndex(*name) || op == forward ||
            name->ends_with(".weight"))
          return WalkResult::advance();
        bool named =
            llvm::any_of(forceRecomputeFqns, [&](const std::string &f) {
              return name->contains(f);
            });
        if (!named)
          return WalkResult::advance();
        auto weight =
            isa<LinearOp, Float8LinearOp>(op)
                ? dyn_cast<RankedTensorType>(op->getOperand(1).getType())
                : RankedTensorType();
        if (!weight) {
          op->emitOpError()
              << "titan-activation-checkpoint: force-recompute-fqns names '"
              << *name << "', which is not a linear layer";
          return WalkResult::interrupt();
        }
        forcedShapes.insert({weight.getDimSize(0), weight.getDimSize(1)});
        return WalkResult::advance();
      });
      if (walk.wasInterrupted())
        return signalPassFailure();
    }

    Builder b(module.getContext());
    // Matmuls seen per block, for "every second matmul is recomputed".
    DenseMap<int64_t, int64_t> matmuls;
    bool anyBlock = false;
    forward.walk([&](Operation *op) {
      std::optional<StringRef> name = getModuleName(op->getLoc());
      std::optional<int64_t> layer = name ? getLayerIndex(*name) : std::nullopt;
      if (!layer || op == forward)
        return;
      anyBlock = true;
      if (mode == "selective" && !perOp && (*layer + 1) % every != 0)
        return;
      op->setAttr(TitanDialect::kRecomputeRegionAttrName,
                  b.getI64IntegerAttr(*layer));
      if (!perOp)
        return;
      bool save = onSaveList(op);
      if (auto linear = dyn_cast<LinearOp>(op)) {
        ArrayRef<int64_t> w = linear.getWeight().getType().getShape();
        save = !forcedShapes.count({w[0], w[1]}) && ++matmuls[*layer] % 2 == 1;
      }
      if (save)
        op->setAttr(TitanDialect::kSaveAttrName, b.getUnitAttr());
    });
    if (!anyBlock)
      forward.emitWarning()
          << "titan-activation-checkpoint: no op's location names a "
             "transformer block (layers.<i>); nothing is recomputed";
  }
};

} // namespace
