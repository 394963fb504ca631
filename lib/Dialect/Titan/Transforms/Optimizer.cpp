//===- Optimizer.cpp - the AdamW training-step update ---------------------===//
//
// Builds `optimizer_step`: global-norm clipping, the learning-rate schedule
// and one AdamW update per parameter, with the optimizer state as explicit
// arguments and results so that later passes can shard it like parameters.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Dialect/Titan/Transforms/GradientNorm.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "llvm/ADT/StringSet.h"

namespace titan {
#define GEN_PASS_DEF_TITANOPTIMIZER
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {

/// A parameter of the functions the optimizer updates.
struct OptimizedParameter {
  StringAttr name;
  RankedTensorType type;
  dist::ShardingAttr sharding;
};

/// The L2 norm of all gradients of the unsharded model (GradientNorm.h);
/// one titan.global_norm when nothing is reduced over a mesh axis.
Value buildGlobalNorm(OpBuilder &b, Location loc,
                      ArrayRef<OptimizedParameter> params, ValueRange grads,
                      bool pipelined) {
  SmallVector<ShardedGradient> sharded;
  for (auto [p, g] : llvm::zip(params, grads))
    sharded.push_back({g, p.sharding});
  if (llvm::all_of(params, [&](const OptimizedParameter &p) {
        return gradientNormAxes(p.sharding, pipelined).empty();
      }))
    return GlobalNormOp::create(
        b, loc, RankedTensorType::get({}, b.getF32Type()), grads);
  SquaredNormGroups squares;
  addGradientSquares(b, loc, squares, sharded, pipelined);
  return buildNormFromSquares(b, loc, squares);
}

struct TitanOptimizerPass
    : titan::impl::TitanOptimizerBase<TitanOptimizerPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // The parameters of every function named, each once, in order of
    // first appearance (a pipeline rank's stages hold disjoint ones).
    SmallVector<OptimizedParameter> optimized;
    llvm::StringSet<> seen;
    func::FuncOp forward;
    SmallVector<std::string> functions(forwardNames.begin(),
                                       forwardNames.end());
    if (functions.empty())
      functions.push_back("forward");
    for (const std::string &name : functions) {
      forward = lookupFunction(module, name, "titan-optimizer");
      if (!forward)
        return signalPassFailure();
      for (const ParameterArgument &p : getParameterArguments(forward))
        if (seen.insert(p.name.getValue()).second)
          optimized.push_back(
              {p.name, p.type,
               forward.getArgAttrOfType<dist::ShardingAttr>(
                   p.index, dist::DistDialect::kShardingAttrName)});
    }
    if (module.lookupSymbol(stepName)) {
      forward.emitError() << "titan-optimizer: a symbol named '" << stepName
                          << "' already exists";
      return signalPassFailure();
    }
    std::optional<LRDecay> decay = symbolizeLRDecay(decayType);
    if (!decay) {
      module.emitError() << "titan-optimizer: decay-type must be linear, sqrt "
                            "or cosine, got '"
                         << decayType << "'";
      return signalPassFailure();
    }

    SmallVector<Type> paramTypes;
    SmallVector<StringAttr> names;
    for (const OptimizedParameter &p : optimized) {
      names.push_back(p.name);
      paramTypes.push_back(p.type);
    }
    if (names.empty()) {
      forward.emitOpError() << "has no arguments tagged '"
                            << TitanDialect::kParamAttrName << "' to optimize";
      return signalPassFailure();
    }
    // AdamW updates master weights: f32 (or f64) parameters.
    for (auto [name, type] : llvm::zip(names, paramTypes))
      if (Type element = cast<ShapedType>(type).getElementType();
          !element.isF32() && !element.isF64()) {
        forward.emitOpError()
            << "titan-optimizer: parameter '" << name.getValue() << "' is "
            << element << "; AdamW updates f32 or f64 master weights";
        return signalPassFailure();
      }

    OpBuilder b(module.getContext());
    Type scalarI64 = RankedTensorType::get({}, b.getI64Type());
    Type scalarF32 = RankedTensorType::get({}, b.getF32Type());
    size_t n = names.size();

    // Arguments: params, grads, exp_avg, exp_avg_sq, step, total_steps.
    SmallVector<Type> argTypes;
    SmallVector<Attribute> argAttrs;
    for (StringRef tag :
         {TitanDialect::kParamAttrName, TitanDialect::kGradAttrName,
          TitanDialect::kExpAvgAttrName, TitanDialect::kExpAvgSqAttrName})
      for (size_t i = 0; i < n; ++i) {
        argTypes.push_back(paramTypes[i]);
        argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(tag, names[i])));
      }
    for (StringRef input : {"step", "total_steps"}) {
      argTypes.push_back(scalarI64);
      argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          TitanDialect::kInputAttrName, b.getStringAttr(input))));
    }
    // Results: params, exp_avg, exp_avg_sq, grad_norm, lr.
    SmallVector<Type> resultTypes;
    SmallVector<Attribute> resultAttrs;
    for (StringRef tag :
         {TitanDialect::kParamAttrName, TitanDialect::kExpAvgAttrName,
          TitanDialect::kExpAvgSqAttrName})
      for (size_t i = 0; i < n; ++i) {
        resultTypes.push_back(paramTypes[i]);
        resultAttrs.push_back(
            b.getDictionaryAttr(b.getNamedAttr(tag, names[i])));
      }
    resultTypes.append({scalarF32, scalarF32});
    for (StringRef output : {"grad_norm", "lr"})
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          TitanDialect::kOutputAttrName, b.getStringAttr(output))));

    Location loc = NameLoc::get(b.getStringAttr("optimizer"));
    b.setInsertionPointToEnd(module.getBody());
    auto step = func::FuncOp::create(b, loc, stepName,
                                     b.getFunctionType(argTypes, resultTypes));
    step.setAllArgAttrs(argAttrs);
    step.setAllResultAttrs(resultAttrs);
    Block *body = step.addEntryBlock();
    b.setInsertionPointToStart(body);
    auto args = body->getArguments();
    auto params = args.slice(0, n), grads = args.slice(n, n),
         expAvg = args.slice(2 * n, n), expAvgSq = args.slice(3 * n, n);
    Value stepIndex = args[4 * n], totalSteps = args[4 * n + 1];

    dist::MeshAttr mesh = dist::getMesh(module);
    Value norm =
        buildGlobalNorm(b, loc, optimized, grads, mesh && mesh.getPp() > 1);
    auto lrOp = LRScheduleOp::create(
        b, loc, scalarF32, stepIndex, totalSteps, b.getF64FloatAttr(lr),
        b.getI64IntegerAttr(warmupSteps),
        decayRatio >= 0 ? b.getF64FloatAttr(decayRatio) : FloatAttr(),
        LRDecayAttr::get(b.getContext(), *decay),
        b.getF64FloatAttr(minLrFactor));

    // The step's scalars once per parameter type (f32, f64).
    llvm::SmallDenseMap<Type, AdamWScalarsOp> scalarsOf;
    auto scalarsFor = [&](Type param) {
      Type element = cast<ShapedType>(param).getElementType();
      AdamWScalarsOp &scalars = scalarsOf[element];
      if (!scalars) {
        auto type = RankedTensorType::get({}, element);
        scalars = AdamWScalarsOp::create(
            b, loc, type, type, type, type, lrOp, norm, stepIndex,
            b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
            b.getF64FloatAttr(weightDecay), b.getF64FloatAttr(maxNorm));
      }
      return scalars;
    };
    SmallVector<Value> newParams, newExpAvg, newExpAvgSq;
    for (size_t i = 0; i < n; ++i) {
      AdamWScalarsOp scalars = scalarsFor(paramTypes[i]);
      // The parameter's location: kernel-fuse-horizontal joins a model
      // unit's updates (one launch a block, as many as the depth).
      auto update = AdamWOp::create(
          b, NameLoc::get(names[i]), params[i], grads[i], expAvg[i],
          expAvgSq[i], scalars.getClipCoef(), scalars.getDecay(),
          scalars.getStepSize(), scalars.getBiasCorrection2Sqrt(),
          b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
          b.getF64FloatAttr(eps));
      newParams.push_back(update.getNewParam());
      newExpAvg.push_back(update.getNewExpAvg());
      newExpAvgSq.push_back(update.getNewExpAvgSq());
    }
    SmallVector<Value> results;
    llvm::append_range(results, newParams);
    llvm::append_range(results, newExpAvg);
    llvm::append_range(results, newExpAvgSq);
    results.append({norm, lrOp});
    func::ReturnOp::create(b, loc, results);
    if (failed(step.verify()))
      return signalPassFailure();
  }
};

} // namespace
