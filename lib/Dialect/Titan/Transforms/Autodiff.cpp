//===- Autodiff.cpp - reverse-mode differentiation of titan graphs --------===//
//
// Walks the forward function backwards once, applying each op's adjoint rule
// (AdjointOpInterface: lib/Dialect/Titan/IR/Adjoints.cpp and
// lib/Dialect/Dist/IR/Adjoints.cpp). Gradients of a value used more than once
// are summed as they arrive.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"
#include "titan/Dialect/Titan/Transforms/Recompute.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

namespace titan {
#define GEN_PASS_DEF_TITANAUTODIFF
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {

/// The differentiation of one function: gradients as they accumulate, and
/// what the ops' adjoint rules (AdjointOpInterface) ask of it.
class GradientBuilder : public AdjointContext {
public:
  GradientBuilder(OpBuilder &b, bool regatherParams)
      : b(b), regatherParams(regatherParams) {}

  /// A forward value as the backward uses it: FSDP-gathered parameters are
  /// gathered again (once) when re-gathering is on, so the forward's copies
  /// die with the forward.
  Value forwardValue(Value v) override {
    if (!regatherParams)
      return v;
    // A mixed-precision copy of a gathered parameter: gather again, cast
    // again.
    if (auto copy = v.getDefiningOp<CastOp>()) {
      Value source = forwardValue(copy.getInput());
      if (source == copy.getInput())
        return v;
      auto [it, inserted] = regathered.try_emplace(v, Value());
      if (inserted)
        it->second = CastOp::create(b, copy.getLoc(), copy.getType(), source);
      return it->second;
    }
    // wait <- all_gather_start <- (argument | replicate(argument))
    auto wait = v.getDefiningOp<dist::WaitOp>();
    auto gather = wait
                      ? wait.getFuture().getDefiningOp<dist::AllGatherStartOp>()
                      : dist::AllGatherStartOp();
    if (!gather)
      return v;
    Value source = gather.getInput();
    if (auto rep = source.getDefiningOp<dist::ReplicateOp>())
      source = rep.getInput();
    auto arg = dyn_cast<BlockArgument>(source);
    if (!arg)
      return v;
    auto func = dyn_cast<FunctionOpInterface>(arg.getOwner()->getParentOp());
    if (func && func.getArgAttr(arg.getArgNumber(),
                                dist::DistDialect::kKeepGatheredAttrName))
      return v;
    auto [it, inserted] = regathered.try_emplace(v, Value());
    if (!inserted)
      return it->second;
    IRMapping map;
    for (Operation *op : {gather.getOperation(), wait.getOperation()})
      b.clone(*op, map);
    return it->second = map.lookup(v);
  }

  /// Adds `grad` to the gradient of `value`.
  void addGradient(Value value, Value grad) override {
    if (!isa<FloatType>(
            cast<RankedTensorType>(value.getType()).getElementType()))
      return;
    auto [it, inserted] = grads.try_emplace(value, grad);
    if (!inserted)
      it->second = AddOp::create(b, grad.getLoc(), it->second, grad);
  }

  Value lookup(Value value) const { return grads.lookup(value); }

  /// Whether `v` is provably the same on every rank of the group over
  /// `axes`: constants, results of all-reduces and all-gathers over (at
  /// least) those axes, and titan ops of such values.
  bool isUniformOver(Value v, ArrayAttr axes) override {
    auto key = std::make_pair(v, axes);
    if (auto it = uniform.find(key); it != uniform.end())
      return it->second;
    bool result = false;
    Operation *def = v.getDefiningOp();
    if (auto wait = dyn_cast_or_null<dist::WaitOp>(def)) {
      Operation *start = wait.getFuture().getDefiningOp();
      if (isa<dist::AllReduceStartOp, dist::AllGatherStartOp>(start)) {
        auto over = start->getAttrOfType<ArrayAttr>("axes");
        result = llvm::all_of(axes, [&](Attribute axis) {
          return llvm::is_contained(over, axis);
        });
      }
    } else if (def && isa<TitanDialect>(def->getDialect())) {
      result = llvm::all_of(def->getOperands(), [&](Value operand) {
        return isUniformOver(operand, axes);
      });
    }
    return uniform[key] = result;
  }
  /// Applies the adjoint rule of `op`, given the gradients of its results.
  LogicalResult propagate(Operation *op) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(lookup(r));
      any |= static_cast<bool>(resultGrads.back());
    }
    if (!any)
      return success();
    Location loc = op->getLoc();
    // Results without a gradient contribute zero; a zero no rule reads
    // (attention's log-sum-exp) is not kept.
    SmallVector<FillOp> zeros;
    for (auto [r, g] : llvm::zip(op->getResults(), resultGrads))
      if (!g)
        g = zeros.emplace_back(
            FillOp::create(b, loc, r.getType(), b.getF64FloatAttr(0.0)));
    auto rule = dyn_cast<AdjointOpInterface>(op);
    if (!rule)
      return op->emitOpError() << "has no adjoint rule in titan-autodiff";
    LogicalResult built = rule.buildAdjoint(b, resultGrads, *this);
    for (FillOp zero : zeros)
      if (zero->use_empty())
        zero->erase();
    return built;
  }

private:
  OpBuilder &b;
  bool regatherParams;
  DenseMap<Value, Value> grads;
  DenseMap<Value, Value> regathered;
  DenseMap<std::pair<Value, ArrayAttr>, bool> uniform;
};

struct TitanAutodiffPass : titan::impl::TitanAutodiffBase<TitanAutodiffPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = lookupFunction(module, forwardName, "titan-autodiff");
    if (!forward)
      return signalPassFailure();
    if (module.lookupSymbol(backwardName)) {
      forward.emitError() << "titan-autodiff: a symbol named '" << backwardName
                          << "' already exists";
      return signalPassFailure();
    }
    FunctionType type = forward.getFunctionType();
    // A pipeline stage before the last returns activations (tagged
    // dist.stage_output) instead of the loss; their gradients come in as
    // arguments.
    SmallVector<unsigned> stageOutputs;
    for (unsigned r = 0; r < type.getNumResults(); ++r)
      if (forward.getResultAttr(r, dist::DistDialect::kStageOutputAttrName))
        stageOutputs.push_back(r);
    bool stageMode = !stageOutputs.empty();
    auto lossType = type.getNumResults() == 1
                        ? dyn_cast<RankedTensorType>(type.getResult(0))
                        : RankedTensorType();
    if (stageMode && stageOutputs.size() != type.getNumResults()) {
      forward.emitOpError() << "must return either the loss or only pipeline "
                               "stage outputs ('"
                            << dist::DistDialect::kStageOutputAttrName
                            << "') to be differentiated";
      return signalPassFailure();
    }
    if (!stageMode && (!lossType || lossType.getRank() != 0 ||
                       !lossType.getElementType().isF32())) {
      forward.emitOpError() << "must return a single tensor<f32> loss (or "
                               "pipeline stage outputs) to be "
                               "differentiated";
      return signalPassFailure();
    }
    if (!forward.getBody().hasOneBlock()) {
      forward.emitOpError() << "must have a single block to be differentiated";
      return signalPassFailure();
    }

    // The new function starts as a copy of the forward.
    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(forward);
    auto backward = cast<func::FuncOp>(b.clone(*forward.getOperation()));
    backward.setSymName(backwardName);
    Block &body = backward.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Value> returned(ret.getOperands());

    SmallVector<Operation *> forwardOps;
    for (Operation &op : body.without_terminator())
      forwardOps.push_back(&op);

    b.setInsertionPoint(ret);
    GradientBuilder grads(b, regatherParams);
    // Every rank returns the (same) loss; the per-rank programs together
    // compute their mean, so each rank's copy is seeded with 1/ranks. With
    // this convention every collective's adjoint is its exact transpose
    // (all_gather <-> reduce_scatter, all_reduce <-> all_reduce), whatever
    // mix of data, tensor and sequence sharding the program uses.
    // Gradient accumulation scales the loss by 1 / accumulationSteps.
    if (accumulationSteps < 1) {
      forward.emitOpError() << "titan-autodiff: accumulation-steps must be "
                               ">= 1, got "
                            << accumulationSteps;
      return signalPassFailure();
    }
    int64_t ranks = 1;
    if (dist::MeshAttr mesh = dist::getMesh(module))
      ranks = mesh.getWorldSize() / mesh.getPp();
    SmallVector<Value> results;
    SmallVector<Type> resultTypes;
    SmallVector<Attribute> resultAttrs;
    if (stageMode) {
      // The seed of a stage output is the gradient the next stage sends
      // (already scaled by the last stage's seed).
      SmallVector<unsigned> indices(stageOutputs.size(),
                                    backward.getNumArguments());
      SmallVector<Type> types;
      SmallVector<DictionaryAttr> attrs;
      SmallVector<Location> locs(stageOutputs.size(), ret.getLoc());
      for (auto [i, r] : llvm::enumerate(stageOutputs)) {
        types.push_back(type.getResult(r));
        attrs.push_back(b.getDictionaryAttr(
            b.getNamedAttr(dist::DistDialect::kStageOutputGradAttrName,
                           b.getI64IntegerAttr(int64_t(i)))));
      }
      unsigned firstSeed = backward.getNumArguments();
      if (failed(backward.insertArguments(indices, types, attrs, locs)))
        return signalPassFailure();
      for (auto [i, r] : llvm::enumerate(stageOutputs)) {
        grads.addGradient(returned[r], body.getArgument(firstSeed + i));
        results.push_back(returned[r]);
        resultTypes.push_back(type.getResult(r));
        resultAttrs.push_back(forward.getResultAttrDict(r));
      }
    } else {
      grads.addGradient(
          returned[0],
          FillOp::create(b, ret.getLoc(), lossType,
                         b.getF64FloatAttr(1.0 / double(ranks) /
                                           double(accumulationSteps))));
      results.push_back(returned[0]);
      resultTypes.push_back(lossType);
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          TitanDialect::kOutputAttrName, b.getStringAttr("loss"))));
    }
    RegionRecompute recompute(backward, forwardOps);
    for (Operation *op : llvm::reverse(forwardOps)) {
      recompute.beforeAdjoint(op, b, grads);
      if (failed(grads.propagate(op)))
        return signalPassFailure();
    }

    // The gradients of the activations the previous stage sent.
    for (unsigned a = 0; a < forward.getNumArguments(); ++a) {
      auto index = forward.getArgAttrOfType<IntegerAttr>(
          a, dist::DistDialect::kStageInputAttrName);
      auto argType = dyn_cast<RankedTensorType>(body.getArgument(a).getType());
      if (!index || !argType || !isa<FloatType>(argType.getElementType()))
        continue;
      Value g = grads.lookup(body.getArgument(a));
      if (!g)
        g = FillOp::create(b, ret.getLoc(), argType, b.getF64FloatAttr(0.0));
      results.push_back(g);
      resultTypes.push_back(argType);
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(dist::DistDialect::kStageInputGradAttrName, index)));
    }
    SmallVector<ParameterArgument> params = getParameterArguments(backward);
    // With accumulation, one accumulator argument per parameter, added in
    // one go (each insertion rebuilds the argument attributes).
    unsigned firstAccumulator = backward.getNumArguments();
    if (accumulationSteps > 1) {
      SmallVector<unsigned> indices(params.size(), firstAccumulator);
      SmallVector<Type> types;
      SmallVector<DictionaryAttr> attrs;
      SmallVector<Location> locs(params.size(), ret.getLoc());
      for (const ParameterArgument &p : params) {
        types.push_back(p.type);
        attrs.push_back(b.getDictionaryAttr(
            b.getNamedAttr(TitanDialect::kGradAttrName, p.name)));
      }
      if (failed(backward.insertArguments(indices, types, attrs, locs)))
        return signalPassFailure();
    }
    for (auto [i, p] : llvm::enumerate(params)) {
      BlockArgument arg = body.getArgument(p.index);
      Value g = grads.lookup(arg);
      if (!g)
        g = FillOp::create(b, ret.getLoc(), p.type, b.getF64FloatAttr(0.0));
      // accumulator + gradient, into the accumulator's slot.
      if (accumulationSteps > 1)
        g = AddOp::create(b, ret.getLoc(),
                          body.getArgument(firstAccumulator + i), g);
      results.push_back(g);
      resultTypes.push_back(p.type);
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(TitanDialect::kGradAttrName, p.name)));
    }
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    recompute.redirectBackward();
    backward.setFunctionType(
        b.getFunctionType(backward.getArgumentTypes(), resultTypes));
    backward.setAllResultAttrs(resultAttrs);
    if (backward->hasAttr(dist::DistDialect::kStageAttrName))
      backward->setAttr(dist::DistDialect::kPhaseAttrName,
                        b.getStringAttr("forward_backward"));
  }
};

} // namespace
