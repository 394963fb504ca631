//===- PipelineSplit.cpp - cut the forward into pipeline stages -----------===//
//
// TorchTitan cuts the model by module names (pipeline_module_split); titan
// cuts the per-rank forward the same way, by the module each op's location
// names ("tok_embeddings", "layers.3.attention.wq", "norm", "output",
// "loss"), with the stage plan of lib/Model/PipelineStages.cpp. Values
// computed in one stage and read in a later one become the stage's
// outputs and the next stages' inputs (passed through the stages between);
// parameter-free values every block reads (the RoPE angles) are computed
// again in each stage that reads them rather than sent.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/Transforms/Passes.h"

#include "titan/Dialect/Titan/IR/ModuleNames.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Model/PipelineStages.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/SetVector.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTPIPELINESPLIT
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

/// An op computed again in every stage that reads it.
constexpr int64_t kEveryStage = -1;

struct DistPipelineSplitPass
    : titan::dist::impl::DistPipelineSplitBase<DistPipelineSplitPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp forward =
        lookupFunction(module, forwardName, "dist-pipeline-split");
    if (!forward)
      return signalPassFailure();
    MeshAttr mesh = getMesh(module);
    if (!mesh) {
      module.emitError() << "dist-pipeline-split: the module has no "
                            "#dist.mesh (run dist-parallelize first)";
      return signalPassFailure();
    }
    if (!forward.getBody().hasOneBlock()) {
      forward.emitOpError() << "must have a single block to be split into "
                               "pipeline stages";
      return signalPassFailure();
    }
    Block &body = forward.getBody().front();

    // The layer count from the parameters, as TorchTitan counts the
    // model's `layers` modules.
    int64_t layers = 0;
    for (const ParameterArgument &p : getParameterArguments(forward)) {
      if (std::optional<int64_t> index = getLayerIndex(p.name.getValue()))
        layers = std::max(layers, *index + 1);
    }
    llvm::Expected<PipelinePlan> plan = planPipelineStages(
        layers, mesh.getPp(), schedule,
        layersPerStage > 0 ? std::optional<int64_t>(layersPerStage)
                           : std::nullopt,
        firstStageLessLayers, lastStageLessLayers);
    if (!plan) {
      forward.emitOpError() << "cannot be split into pipeline stages: "
                            << llvm::toString(plan.takeError());
      return signalPassFailure();
    }
    int64_t numStages = int64_t(plan->stages.size());
    if (rank >= mesh.getPp()) {
      module.emitError() << "dist-pipeline-split: rank " << rank
                         << " is not a pipeline rank (pp = " << mesh.getPp()
                         << ")";
      return signalPassFailure();
    }
    SmallVector<int64_t> layerStage(layers, -1);
    for (auto [s, stage] : llvm::enumerate(plan->stages))
      for (int64_t l = stage.firstLayer; l < stage.firstLayer + stage.numLayers;
           ++l)
        layerStage[l] = int64_t(s);

    // Each op's stage, from its module name; ops without one (or with a
    // name outside the model) take the stage of their users.
    DenseMap<Operation *, int64_t> stageOf;
    auto stageOfName = [&](StringRef name) -> std::optional<int64_t> {
      if (isInModule(name, "freqs_cis"))
        return kEveryStage;
      if (isInModule(name, "tok_embeddings"))
        return 0;
      if (isInModule(name, "norm") || isInModule(name, "output") ||
          isInModule(name, "loss"))
        return numStages - 1;
      if (std::optional<int64_t> index = getLayerIndex(name))
        if (*index < layers)
          return layerStage[*index];
      return std::nullopt;
    };
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *op : llvm::reverse(ops)) {
      // Values computed from nothing (the RoPE angles, a rank's shard
      // offset, constants) are computed again by each stage that reads
      // them rather than sent.
      if (op->getNumOperands() == 0 && op->getNumRegions() == 0 &&
          isMemoryEffectFree(op)) {
        stageOf[op] = kEveryStage;
        continue;
      }
      std::optional<StringRef> name = getModuleName(op->getLoc());
      std::optional<int64_t> stage = name ? stageOfName(*name) : std::nullopt;
      if (!stage) {
        // The earliest stage among the users: values are sent forward.
        for (Operation *user : op->getUsers())
          if (auto it = stageOf.find(user); it != stageOf.end())
            if (it->second != kEveryStage)
              stage = stage ? std::min(*stage, it->second) : it->second;
        if (!stage) {
          op->emitOpError() << "belongs to no pipeline stage: its location "
                               "names no module of the model "
                               "(tok_embeddings, layers.<i>, norm, output, "
                               "loss, freqs_cis) and no user has one";
          return signalPassFailure();
        }
      }
      stageOf[op] = *stage;
    }
    // Values shared by every stage must not depend on a stage's work.
    for (Operation *op : ops)
      if (stageOf[op] == kEveryStage)
        for (Value operand : op->getOperands())
          if (Operation *def = operand.getDefiningOp();
              isa<BlockArgument>(operand) || stageOf[def] != kEveryStage) {
            op->emitOpError() << "is computed in every pipeline stage but "
                                 "reads a value of one stage";
            return signalPassFailure();
          }

    // A parameter belongs to one stage (tied weights cannot be split).
    DenseMap<unsigned, int64_t> argStage;
    for (Operation *op : ops)
      for (Value operand : op->getOperands())
        if (auto arg = dyn_cast<BlockArgument>(operand)) {
          auto [it, inserted] =
              argStage.try_emplace(arg.getArgNumber(), stageOf[op]);
          if (!inserted && it->second != stageOf[op] &&
              forward.getArgAttr(arg.getArgNumber(),
                                 TitanDialect::kParamAttrName)) {
            op->emitOpError()
                << "reads parameter '"
                << forward.getArgAttr(arg.getArgNumber(),
                                      TitanDialect::kParamAttrName)
                << "' in pipeline stage " << stageOf[op] << ", but stage "
                << it->second
                << " reads it too: a parameter must belong to one stage "
                   "(tied embeddings cannot be pipelined)";
            return signalPassFailure();
          }
        }

    // The values crossing each boundary k -> k + 1: defined in a stage
    // <= k, read in one > k, in program order.
    SmallVector<llvm::SetVector<Value>> crossing(numStages);
    for (Operation *op : ops) {
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (!def || stageOf[def] == kEveryStage)
          continue;
        int64_t from = stageOf[def], to = stageOf[op];
        if (to == kEveryStage)
          continue;
        if (from > to) {
          op->emitOpError() << "in pipeline stage " << to
                            << " reads a value of the later stage " << from;
          return signalPassFailure();
        }
        for (int64_t k = from; k < to; ++k)
          crossing[k].insert(operand);
      }
    }
    // In program order, so the stage signatures follow the model.
    for (llvm::SetVector<Value> &values : crossing) {
      SmallVector<Value> sorted(values.begin(), values.end());
      llvm::sort(sorted, [](Value a, Value b) {
        return a.getDefiningOp()->isBeforeInBlock(b.getDefiningOp());
      });
      values = llvm::SetVector<Value>(sorted.begin(), sorted.end());
    }
    Value loss = body.getTerminator()->getOperand(0);
    if (Operation *def = loss.getDefiningOp();
        !def || stageOf[def] != numStages - 1) {
      forward.emitOpError() << "must compute its loss in the last pipeline "
                               "stage";
      return signalPassFailure();
    }

    OpBuilder b(module.getContext());
    b.setInsertionPointAfter(forward);
    SmallVector<int64_t> stages;
    if (rank < 0)
      for (int64_t s = 0; s < numStages; ++s)
        stages.push_back(s);
    else
      stages.assign(plan->stagesOfRank[rank].begin(),
                    plan->stagesOfRank[rank].end());
    llvm::sort(stages);
    for (int64_t s : stages)
      if (failed(buildStage(b, forward, ops, stageOf, crossing, s, numStages)))
        return signalPassFailure();

    SmallVector<int64_t> stageRanks(numStages);
    for (auto [r, owned] : llvm::enumerate(plan->stagesOfRank))
      for (int64_t s : owned)
        stageRanks[s] = int64_t(r);
    SmallVector<NamedAttribute> info = {
        b.getNamedAttr("num_stages", b.getI64IntegerAttr(numStages)),
        b.getNamedAttr("stage_ranks", b.getDenseI64ArrayAttr(stageRanks)),
        b.getNamedAttr("schedule", b.getStringAttr(schedule))};
    if (rank >= 0)
      info.push_back(b.getNamedAttr("rank", b.getI64IntegerAttr(rank)));
    module->setAttr(DistDialect::kPipelineAttrName, b.getDictionaryAttr(info));
    forward.erase();
  }

  /// Adds function `<prefix><s>`: the ops of stage `s`, reading the
  /// arguments they use, the values crossing into it (stage inputs) and
  /// returning those crossing out of it (stage outputs) or the loss.
  LogicalResult buildStage(OpBuilder &b, func::FuncOp forward,
                           ArrayRef<Operation *> ops,
                           DenseMap<Operation *, int64_t> &stageOf,
                           ArrayRef<llvm::SetVector<Value>> crossing, int64_t s,
                           int64_t numStages) {
    Block &body = forward.getBody().front();
    // Arguments: the forward's arguments this stage reads (in their order,
    // with their attributes), then the stage inputs.
    llvm::SetVector<unsigned> usedArgs;
    for (Operation *op : ops)
      if (stageOf[op] == s)
        for (Value operand : op->getOperands())
          if (auto arg = dyn_cast<BlockArgument>(operand))
            usedArgs.insert(arg.getArgNumber());
    SmallVector<unsigned> argOrder(usedArgs.begin(), usedArgs.end());
    llvm::sort(argOrder);
    SmallVector<Type> argTypes;
    SmallVector<DictionaryAttr> argAttrs;
    for (unsigned a : argOrder) {
      argTypes.push_back(body.getArgument(a).getType());
      argAttrs.push_back(forward.getArgAttrDict(a));
    }
    ArrayRef<Value> inputs =
        s > 0 ? crossing[s - 1].getArrayRef() : ArrayRef<Value>();
    for (auto [i, v] : llvm::enumerate(inputs)) {
      argTypes.push_back(v.getType());
      argAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          DistDialect::kStageInputAttrName, b.getI64IntegerAttr(i))));
    }
    bool last = s == numStages - 1;
    ArrayRef<Value> outputs =
        last ? ArrayRef<Value>() : crossing[s].getArrayRef();
    SmallVector<Type> resultTypes;
    SmallVector<DictionaryAttr> resultAttrs;
    Value loss = body.getTerminator()->getOperand(0);
    if (last) {
      resultTypes.push_back(loss.getType());
      resultAttrs.push_back(b.getDictionaryAttr({}));
    }
    for (auto [i, v] : llvm::enumerate(outputs)) {
      resultTypes.push_back(v.getType());
      resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
          DistDialect::kStageOutputAttrName, b.getI64IntegerAttr(i))));
    }

    auto func =
        func::FuncOp::create(b, forward.getLoc(), prefix + std::to_string(s),
                             b.getFunctionType(argTypes, resultTypes));
    func.setAllArgAttrs(argAttrs);
    func.setAllResultAttrs(resultAttrs);
    for (NamedAttribute attr : forward->getDialectAttrs())
      func->setAttr(attr.getName(), attr.getValue());
    func->setAttr(DistDialect::kStageAttrName, b.getI64IntegerAttr(s));
    func->setAttr(DistDialect::kPhaseAttrName, b.getStringAttr("forward"));
    Block *entry = func.addEntryBlock();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(entry);
    IRMapping map;
    for (auto [i, a] : llvm::enumerate(argOrder))
      map.map(body.getArgument(a), entry->getArgument(i));
    for (auto [i, v] : llvm::enumerate(inputs))
      map.map(v, entry->getArgument(argOrder.size() + i));
    // Every-stage values are cloned where first read, with their operands.
    std::function<void(Value)> materialize = [&](Value v) {
      if (map.contains(v))
        return;
      Operation *def = v.getDefiningOp();
      for (Value operand : def->getOperands())
        materialize(operand);
      b.clone(*def, map);
    };
    for (Operation *op : ops) {
      if (stageOf[op] != s)
        continue;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && stageOf[def] == kEveryStage)
          materialize(operand);
      b.clone(*op, map);
    }
    SmallVector<Value> results;
    if (last)
      results.push_back(map.lookup(loss));
    for (Value v : outputs)
      results.push_back(map.lookup(v));
    func::ReturnOp::create(b, body.getTerminator()->getLoc(), results);
    return success();
  }
};

} // namespace
