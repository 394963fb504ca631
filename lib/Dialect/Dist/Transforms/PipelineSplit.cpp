//===- PipelineSplit.cpp - cut the forward into pipeline stages -----------===//
//
// TorchTitan cuts the model by module names (pipeline_module_split); titan
// cuts the per-rank forward the same way, by the module each op's location
// names, with the stage plan of the module's dist.pipeline (each stage's
// module names, which a model's pipeline plan decides: for Llama,
// titan-llama-pipeline-stages). Values computed in one stage and read in a
// later one become the stage's outputs and the next stages' inputs (passed
// through the stages between); parameter-free values every block reads
// (the RoPE angles) are computed again in each stage that reads them
// rather than sent.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/Transforms/Passes.h"

#include "titan/Dialect/Dist/IR/DistPlan.h"
#include "titan/Dialect/Titan/IR/ModuleNames.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"

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

/// The stage plan of a module's dist.pipeline.
struct StagePlan {
  DictionaryAttr pipeline;
  SmallVector<SmallVector<StringRef>> stageModules;
  SmallVector<StringRef> everyStageModules;
  ArrayRef<int64_t> stageRanks;
};

/// The module names of `attr`, an array of strings, or nullopt.
std::optional<SmallVector<StringRef>> moduleNames(Attribute attr) {
  auto names = dyn_cast_or_null<ArrayAttr>(attr);
  if (!names)
    return std::nullopt;
  SmallVector<StringRef> result;
  for (Attribute name : names) {
    auto text = dyn_cast<StringAttr>(name);
    if (!text)
      return std::nullopt;
    result.push_back(text.getValue());
  }
  return result;
}

/// The module's stage plan for `pp` pipeline ranks, or failure after an
/// error on it.
FailureOr<StagePlan> readStagePlan(ModuleOp module, int64_t pp) {
  StagePlan plan;
  plan.pipeline =
      module->getAttrOfType<DictionaryAttr>(DistDialect::kPipelineAttrName);
  auto error = [&] {
    return module.emitError()
           << "dist-pipeline-split: the module's "
           << DistDialect::kPipelineAttrName
           << " must hold the stage plan, num_stages, stage_ranks and "
           << kStageModulesKey << " (one array of module names per stage; "
           << kEveryStageModulesKey
           << " optional), as a model's pipeline plan writes it (for Llama, "
              "titan-llama-pipeline-stages)";
  };
  if (!plan.pipeline)
    return error();
  auto stages =
      dyn_cast_or_null<ArrayAttr>(plan.pipeline.get(kStageModulesKey));
  auto numStages = plan.pipeline.getAs<IntegerAttr>("num_stages");
  auto stageRanks = plan.pipeline.getAs<DenseI64ArrayAttr>("stage_ranks");
  if (!stages || !numStages || !stageRanks ||
      int64_t(stages.size()) != numStages.getInt() ||
      stageRanks.size() != numStages.getInt())
    return error();
  for (Attribute stage : stages) {
    std::optional<SmallVector<StringRef>> names = moduleNames(stage);
    if (!names)
      return error();
    plan.stageModules.push_back(std::move(*names));
  }
  if (Attribute every = plan.pipeline.get(kEveryStageModulesKey)) {
    std::optional<SmallVector<StringRef>> names = moduleNames(every);
    if (!names)
      return error();
    plan.everyStageModules = std::move(*names);
  }
  // Each stage runs on a pipeline rank, and each pipeline rank runs a
  // stage: a rank without one would have no program.
  SmallVector<bool> owns(pp, false);
  for (auto [s, r] : llvm::enumerate(stageRanks.asArrayRef())) {
    if (r < 0 || r >= pp)
      return module.emitError()
             << "dist-pipeline-split: " << DistDialect::kPipelineAttrName
             << "'s stage_ranks puts stage " << s << " on rank " << r
             << ", which is not a pipeline rank (0 to " << pp - 1
             << " for pp = " << pp << ")";
    owns[r] = true;
  }
  for (int64_t r = 0; r < pp; ++r)
    if (!owns[r])
      return module.emitError()
             << "dist-pipeline-split: " << DistDialect::kPipelineAttrName
             << "'s stage_ranks " << stageRanks << " gives pipeline rank " << r
             << " no stage (pp = " << pp
             << "): each pipeline rank needs at least one";
  plan.stageRanks = stageRanks.asArrayRef();
  return plan;
}

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

    FailureOr<StagePlan> plan = readStagePlan(module, mesh.getPp());
    if (failed(plan))
      return signalPassFailure();
    int64_t numStages = int64_t(plan->stageModules.size());
    if (rank >= mesh.getPp()) {
      module.emitError() << "dist-pipeline-split: rank " << rank
                         << " is not a pipeline rank (pp = " << mesh.getPp()
                         << ")";
      return signalPassFailure();
    }

    // Each op's stage, from its module name; ops without one (or with a
    // name outside the plan) take the stage of their users.
    DenseMap<Operation *, int64_t> stageOf;
    auto stageOfName = [&](StringRef name) -> std::optional<int64_t> {
      auto in = [&](ArrayRef<StringRef> modules) {
        return llvm::any_of(modules,
                            [&](StringRef m) { return isInModule(name, m); });
      };
      if (in(plan->everyStageModules))
        return kEveryStage;
      for (auto [s, modules] : llvm::enumerate(plan->stageModules))
        if (in(modules))
          return int64_t(s);
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
                               "names no module of dist.pipeline's "
                            << kStageModulesKey << " or "
                            << kEveryStageModulesKey << " and no user has one";
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
    for (int64_t s = 0; s < numStages; ++s)
      if (rank < 0 || plan->stageRanks[s] == rank)
        stages.push_back(s);
    for (int64_t s : stages)
      if (failed(buildStage(b, forward, ops, stageOf, crossing, s, numStages)))
        return signalPassFailure();

    // The cut consumed the stages' module names.
    NamedAttrList info(plan->pipeline);
    info.erase(kStageModulesKey);
    info.erase(kEveryStageModulesKey);
    if (rank >= 0)
      info.set("rank", b.getI64IntegerAttr(rank));
    module->setAttr(DistDialect::kPipelineAttrName,
                    info.getDictionary(module.getContext()));
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
