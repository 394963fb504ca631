//===- PipelinePhases.cpp - a stage's step as the schedule's actions ------===//
//
// A pipeline schedule runs a stage's forward (F) and backward (B) of one
// microbatch as separate actions, with other work between them; zero-bubble
// schedules split B further into the input gradient (I), which the previous
// stage waits for, and the weight gradient (W), which can fill bubbles.
// titan-autodiff builds a stage's whole step as one function; this pass
// partitions its ops by data flow, so each phase is exactly the ops of the
// step it needs and the phases together run every op of the step once, in
// the same order: the numbers are those of the unsplit step.
//
//   F = what the stage's outputs (or loss) depend on;
//   I = the rest that the gradients of the stage's inputs depend on;
//   W = the rest (the weight gradients); B = I + W when not split.
//
// A value one phase computes and a later one reads is returned by the
// first and passed to the later one (a stash, `dist.stash = j`, which the
// runtime keeps per microbatch in flight), except values computed from the
// parameters alone (gathered and cast weights, the RoPE angles), which the
// later phase computes again rather than keep per microbatch.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/Transforms/Passes.h"

#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTPIPELINEPHASES
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

enum Phase : int { F = 0, I = 1, W = 2 };

/// A value of a step and the attributes it has as an argument or result of
/// the function outlined from the step.
using TaggedValue = std::pair<Value, DictionaryAttr>;

/// Outlines `ops` (of `step`, in program order) as function `name` beside
/// it, of pipeline phase `phase`: its arguments are the step's arguments
/// `stepArgs` (with their attributes), then `extraArgs` (values of the
/// step the function receives); it returns `results`.
func::FuncOp outlineStepPart(OpBuilder &b, func::FuncOp step, StringRef name,
                             StringRef phase, ArrayRef<unsigned> stepArgs,
                             ArrayRef<TaggedValue> extraArgs,
                             ArrayRef<Operation *> ops,
                             ArrayRef<TaggedValue> results) {
  Block &body = step.getBody().front();
  SmallVector<Type> argTypes, resultTypes;
  SmallVector<DictionaryAttr> argAttrs, resultAttrs;
  for (unsigned a : stepArgs) {
    argTypes.push_back(body.getArgument(a).getType());
    argAttrs.push_back(step.getArgAttrDict(a));
  }
  for (const TaggedValue &v : extraArgs) {
    argTypes.push_back(v.first.getType());
    argAttrs.push_back(v.second);
  }
  for (const TaggedValue &v : results) {
    resultTypes.push_back(v.first.getType());
    resultAttrs.push_back(v.second);
  }
  auto func = func::FuncOp::create(b, step.getLoc(), name,
                                   b.getFunctionType(argTypes, resultTypes));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs);
  for (NamedAttribute attr : step->getDialectAttrs())
    func->setAttr(attr.getName(), attr.getValue());
  func->setAttr(DistDialect::kPhaseAttrName, b.getStringAttr(phase));
  Block *entry = func.addEntryBlock();
  IRMapping map;
  for (auto [i, a] : llvm::enumerate(stepArgs))
    map.map(body.getArgument(a), entry->getArgument(i));
  for (auto [i, v] : llvm::enumerate(extraArgs))
    map.map(v.first, entry->getArgument(stepArgs.size() + i));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(entry);
  for (Operation *op : ops)
    b.clone(*op, map);
  SmallVector<Value> mapped;
  for (const TaggedValue &v : results)
    mapped.push_back(map.lookup(v.first));
  func::ReturnOp::create(b, step.getLoc(), mapped);
  return func;
}

/// Splits one stage step into its phases.
class PhaseSplitter {
public:
  PhaseSplitter(func::FuncOp step, bool splitWeightGrad)
      : step(step), body(step.getBody().front()),
        splitWeightGrad(splitWeightGrad) {}

  LogicalResult run(StringRef stageName) {
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);

    // The phase each result belongs to, by what it is.
    SmallVector<Phase> resultPhase;
    for (unsigned r = 0; r < ret.getNumOperands(); ++r) {
      if (step.getResultAttr(r, DistDialect::kStageOutputAttrName) ||
          step.getResultAttr(r, TitanDialect::kOutputAttrName))
        resultPhase.push_back(F);
      else if (step.getResultAttr(r, DistDialect::kStageInputGradAttrName))
        resultPhase.push_back(I);
      else if (step.getResultAttr(r, TitanDialect::kGradAttrName) ||
               step.getResultAttr(r, DistDialect::kUnshardedGradAttrName))
        resultPhase.push_back(W);
      else
        return step.emitOpError()
               << "result " << r
               << " is neither a stage output, the loss, a stage input's "
                  "gradient nor a parameter's gradient";
    }
    // F: the backward slice of its results; I: of its results, among the
    // rest; W: everything else.
    for (Phase p : {F, I}) {
      SmallVector<Operation *> worklist;
      for (auto [r, operand] : llvm::enumerate(ret.getOperands()))
        if (resultPhase[r] == p)
          if (Operation *def = operand.getDefiningOp())
            worklist.push_back(def);
      while (!worklist.empty()) {
        Operation *op = worklist.pop_back_val();
        if (!phaseOf.try_emplace(op, p).second)
          continue;
        for (Value operand : op->getOperands())
          if (Operation *def = operand.getDefiningOp())
            worklist.push_back(def);
      }
    }
    for (Operation *op : ops)
      phaseOf.try_emplace(op, W);
    // Without the I/W split, B is I + W.
    auto merged = [&](Phase p) { return splitWeightGrad || p == F ? p : I; };
    for (Operation *op : ops)
      phaseOf[op] = merged(phaseOf[op]);
    for (Phase &p : resultPhase)
      p = merged(p);

    // Stashes: values of an earlier phase that a later one reads and
    // cannot compute again from the parameters.
    for (Operation *op : ops)
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && phaseOf[def] < phaseOf[op] && !parameterOnly(operand))
          stash.insert(operand);
    for (auto [r, operand] : llvm::enumerate(ret.getOperands()))
      if (Operation *def = operand.getDefiningOp();
          def && phaseOf[def] < resultPhase[r] && !parameterOnly(operand))
        stash.insert(operand);

    static constexpr StringLiteral splitNames[] = {
        "_forward", "_backward_input", "_backward_weight"};
    static constexpr StringLiteral splitPhases[] = {"forward", "backward_input",
                                                    "backward_weight"};
    OpBuilder b(step);
    SmallVector<Phase> phases = {F, I};
    if (splitWeightGrad)
      phases.push_back(W);
    for (Phase p : phases) {
      bool backward = p == I && !splitWeightGrad;
      StringRef suffix = backward ? "_backward" : splitNames[p];
      StringRef phaseName = backward ? "backward" : splitPhases[p];
      if (failed(buildPhase(b, p, resultPhase, (stageName + suffix).str(),
                            phaseName)))
        return failure();
    }
    step.erase();
    return success();
  }

private:
  /// Whether `v` is computed from parameters (and constants) alone.
  bool parameterOnly(Value v) { return paramOnly.contains(v); }

  LogicalResult buildPhase(OpBuilder &b, Phase p, ArrayRef<Phase> resultPhase,
                           const std::string &name, StringRef phaseName) {
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    // The ops this phase runs: its own, and the parameter-only values of
    // earlier phases it reads, computed again.
    llvm::SetVector<Operation *> run;
    std::function<void(Value)> recompute = [&](Value v) {
      Operation *def = v.getDefiningOp();
      if (!def || phaseOf[def] >= p || run.contains(def))
        return;
      for (Value operand : def->getOperands())
        recompute(operand);
      run.insert(def);
    };
    auto read = [&](Value v) {
      if (Operation *def = v.getDefiningOp();
          def && phaseOf[def] < p && !stash.contains(v))
        recompute(v);
    };
    for (Operation *op : ops)
      if (phaseOf[op] == p)
        for (Value operand : op->getOperands())
          read(operand);
    for (auto [r, operand] : llvm::enumerate(ret.getOperands()))
      if (resultPhase[r] == p)
        read(operand);
    for (Operation *op : ops)
      if (phaseOf[op] == p)
        run.insert(op);
    // In program order: the recomputed values first came before.
    SmallVector<Operation *> order(run.begin(), run.end());
    llvm::sort(order, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });

    // Arguments: the step's arguments the ops read, then the stashes from
    // earlier phases.
    llvm::SetVector<unsigned> usedArgs;
    llvm::SetVector<Value> stashIn;
    auto noteOperand = [&](Value v) {
      if (auto arg = dyn_cast<BlockArgument>(v))
        usedArgs.insert(arg.getArgNumber());
      else if (stash.contains(v) && phaseOf[v.getDefiningOp()] < p)
        stashIn.insert(v);
    };
    for (Operation *op : order)
      for (Value operand : op->getOperands())
        noteOperand(operand);
    for (auto [r, operand] : llvm::enumerate(ret.getOperands()))
      if (resultPhase[r] == p)
        noteOperand(operand);
    SmallVector<unsigned> argOrder(usedArgs.begin(), usedArgs.end());
    llvm::sort(argOrder);
    SmallVector<Value> stashInOrder = sortedByIndex(stashIn.getArrayRef());
    SmallVector<TaggedValue> stashArgs;
    for (Value v : stashInOrder)
      stashArgs.push_back({v, stashAttr(b, v)});
    // Results: the step's results of this phase, then the stashes it
    // computes for later phases.
    SmallVector<TaggedValue> results;
    for (auto [r, operand] : llvm::enumerate(ret.getOperands()))
      if (resultPhase[r] == p)
        results.push_back({operand, step.getResultAttrDict(unsigned(r))});
    SmallVector<Value> stashOut;
    for (Value v : stash)
      if (phaseOf[v.getDefiningOp()] == p)
        stashOut.push_back(v);
    for (Value v : sortedByIndex(stashOut))
      results.push_back({v, stashAttr(b, v)});
    outlineStepPart(b, step, name, phaseName, argOrder, stashArgs, order,
                    results);
    return success();
  }

  SmallVector<Value> sortedByIndex(ArrayRef<Value> values) {
    SmallVector<Value> sorted(values);
    llvm::sort(sorted,
               [&](Value a, Value b) { return stashIndex(a) < stashIndex(b); });
    return sorted;
  }
  int64_t stashIndex(Value v) {
    return llvm::find(stash.getArrayRef(), v) - stash.getArrayRef().begin();
  }
  DictionaryAttr stashAttr(OpBuilder &b, Value v) {
    return b.getDictionaryAttr(b.getNamedAttr(
        DistDialect::kStashAttrName, b.getI64IntegerAttr(stashIndex(v))));
  }

  func::FuncOp step;
  Block &body;
  bool splitWeightGrad;
  SmallVector<Operation *> ops;
  DenseMap<Operation *, Phase> phaseOf;
  ParameterValues paramOnly;
  /// The stashed values, in the order they were found: j is the index.
  llvm::SetVector<Value> stash;
};

/// Moves what a stage step computes from its parameters (FSDP's gathered
/// weights, their low-precision copies) into a
/// function `<stage>_unshard` run once per step, whose results the phases
/// take as arguments (`dist.per_step = j`): the weights stay gathered
/// across the step's microbatches, as TorchTitan's FSDP does under
/// pipeline parallelism, and each is gathered once rather than in every
/// microbatch's forward and again in its backward. Equal computations (a
/// forward gather and its backward re-gather) become one first.
class PerStepHoister {
public:
  explicit PerStepHoister(func::FuncOp step)
      : step(step), body(step.getBody().front()) {}

  /// Outlines `<stageName>_unshard`; with `hoist` false it computes
  /// nothing (what the phases compute from the parameters stays in each
  /// microbatch's: FSDP's reshard_after_forward) and only the deferred
  /// gradients' reset goes there.
  LogicalResult run(StringRef stageName, bool hoist) {
    if (hoist)
      mergeEqualParameterValues();
    // The frontier: parameter-only values read by per-microbatch work.
    // Values made from nothing (constants, the RoPE angles) stay: they cost
    // less than a slot kept for the step.
    llvm::SetVector<Value> frontier;
    for (Operation &op : body)
      if (hoist && !isParameterOnly(&op))
        for (Value operand : op.getOperands())
          if (Operation *def = operand.getDefiningOp();
              def && def->getNumOperands() > 0 && isParameterOnly(def))
            frontier.insert(operand);
    // <stage>_unshard: the parameter-only ops the frontier needs, in order.
    llvm::SetVector<Operation *> needed;
    std::function<void(Operation *)> need = [&](Operation *op) {
      if (needed.contains(op))
        return;
      for (Value operand : op->getOperands())
        if (Operation *def = operand.getDefiningOp())
          need(def);
      needed.insert(op);
    };
    for (Value v : frontier)
      need(v.getDefiningOp());
    SmallVector<Operation *> order(needed.begin(), needed.end());
    llvm::sort(order, [](Operation *a, Operation *b) {
      return a->isBeforeInBlock(b);
    });
    llvm::SetVector<unsigned> args;
    for (Operation *op : order)
      for (Value operand : op->getOperands())
        if (auto arg = dyn_cast<BlockArgument>(operand))
          args.insert(arg.getArgNumber());
    SmallVector<unsigned> argOrder(args.begin(), args.end());
    llvm::sort(argOrder);

    OpBuilder b(step);
    SmallVector<TaggedValue> results;
    for (auto [j, v] : llvm::enumerate(frontier))
      results.push_back({v, perStepAttr(b, int64_t(j))});
    outlineStepPart(b, step, (stageName + "_unshard").str(), "unshard",
                    argOrder, {}, order, results);

    // The step takes the frontier as arguments; the hoisted ops go.
    unsigned first = step.getNumArguments();
    SmallVector<unsigned> indices(frontier.size(), first);
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    SmallVector<Location> locs(frontier.size(), step.getLoc());
    for (auto [j, v] : llvm::enumerate(frontier)) {
      types.push_back(v.getType());
      attrs.push_back(perStepAttr(b, int64_t(j)));
    }
    if (failed(step.insertArguments(indices, types, attrs, locs)))
      return failure();
    for (auto [j, v] : llvm::enumerate(frontier))
      Value(v).replaceAllUsesWith(body.getArgument(first + unsigned(j)));
    for (Operation *op : llvm::reverse(order))
      if (op->use_empty())
        op->erase();
    return success();
  }

private:
  /// Whether `op` computes from the step's parameters (and constants)
  /// alone.
  bool isParameterOnly(Operation *op) {
    if (isa<func::ReturnOp>(op) || op->getNumRegions() != 0)
      return false;
    auto [it, inserted] = parameterOnly.try_emplace(op, false);
    if (!inserted)
      return it->second;
    bool result = llvm::all_of(op->getOperands(), [&](Value v) {
      if (auto arg = dyn_cast<BlockArgument>(v))
        return static_cast<bool>(
            step.getArgAttr(arg.getArgNumber(), TitanDialect::kParamAttrName));
      return isParameterOnly(v.getDefiningOp());
    });
    return parameterOnly[op] = result;
  }

  /// The discardable attributes of `op` but activation checkpointing's
  /// markers: whether an op was in a recompute region, or is the
  /// backward's copy of one, says nothing of what it computes, and once
  /// hoisted it runs once per step either way.
  static DictionaryAttr attributesButRecompute(Operation *op) {
    NamedAttrList attrs(op->getDiscardableAttrDictionary());
    for (StringRef marker :
         {TitanDialect::kRecomputeRegionAttrName, TitanDialect::kSaveAttrName,
          TitanDialect::kRecomputedAttrName})
      attrs.erase(marker);
    return attrs.getDictionary(op->getContext());
  }

  /// Whether `a` and `b` compute the same thing from the same operands.
  static bool computeTheSame(Operation *a, Operation *b) {
    return OperationEquivalence::isEquivalentTo(
               a, b,
               OperationEquivalence::IgnoreLocations |
                   OperationEquivalence::IgnoreDiscardableAttrs) &&
           attributesButRecompute(a) == attributesButRecompute(b);
  }

  /// Merges parameter-only ops that compute the same thing from the same
  /// operands (collectives included: the same gather of the same shard),
  /// in order, so that what a merged op reads is merged first: the
  /// forward's low-precision copy of a recomputed block's weight and the
  /// backward's copy of it become one, and its gather can then be
  /// narrowed (one user).
  void mergeEqualParameterValues() {
    SmallVector<Operation *> kept;
    for (Operation &op : llvm::make_early_inc_range(body)) {
      if (!isParameterOnly(&op))
        continue;
      Operation *same = nullptr;
      for (Operation *k : kept)
        if (computeTheSame(&op, k)) {
          same = k;
          break;
        }
      if (!same) {
        kept.push_back(&op);
        continue;
      }
      op.replaceAllUsesWith(same->getResults());
      parameterOnly.erase(&op);
      op.erase();
    }
  }

  DictionaryAttr perStepAttr(OpBuilder &b, int64_t j) {
    return b.getDictionaryAttr(
        b.getNamedAttr(DistDialect::kPerStepAttrName, b.getI64IntegerAttr(j)));
  }

  func::FuncOp step;
  Block &body;
  DenseMap<Operation *, bool> parameterOnly;
};

/// Defers FSDP's gradient reduce-scatters to once per step: where a
/// stage step adds a reduce-scattered gradient into its accumulator, it
/// adds the whole gradient into a per-step accumulator instead
/// (`dist.unsharded_grad`), and `<stage>_reduce_grad`, run after the
/// stage's last backward (the list's REDUCE_GRAD), reduce-scatters the sum
/// into the gradient; `<stage>_unshard` resets the sums each step. As
/// FSDP2 under TorchTitan's pipeline schedules: one reduce-scatter per
/// step, of the microbatches' summed gradient.
class GradientDeferral {
public:
  GradientDeferral(func::FuncOp step, func::FuncOp unshard)
      : step(step), unshard(unshard), body(step.getBody().front()) {}

  LogicalResult run(StringRef stageName) {
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    struct Deferred {
      StringAttr name;
      dist::ReduceScatterStartOp scatter;
      Value accumulator;
    };
    SmallVector<Deferred> deferred;
    SmallVector<unsigned> removed;
    // result = add(accumulator, wait(reduce_scatter(x))), the accumulator
    // the argument of the same gradient.
    for (unsigned r = 0; r < ret.getNumOperands(); ++r) {
      auto name =
          step.getResultAttrOfType<StringAttr>(r, TitanDialect::kGradAttrName);
      auto add = ret.getOperand(r).getDefiningOp<AddOp>();
      if (!name || !add || !add->hasOneUse())
        continue;
      for (unsigned side = 0; side < 2; ++side) {
        auto acc = dyn_cast<BlockArgument>(add->getOperand(side));
        auto wait = add->getOperand(1 - side).getDefiningOp<dist::WaitOp>();
        auto scatter =
            wait ? wait.getFuture().getDefiningOp<dist::ReduceScatterStartOp>()
                 : dist::ReduceScatterStartOp();
        if (!acc || !scatter || !wait->hasOneUse() ||
            step.getArgAttr(acc.getArgNumber(), TitanDialect::kGradAttrName) !=
                name)
          continue;
        deferred.push_back({name, scatter, acc});
        removed.push_back(r);
        break;
      }
    }

    OpBuilder b(step);
    // <stage>_reduce_grad: gradient += reduce_scatter(sum), per parameter.
    SmallVector<Type> argTypes, resultTypes;
    SmallVector<DictionaryAttr> argAttrs, resultAttrs;
    for (Deferred &d : deferred) {
      Type whole = d.scatter.getInput().getType();
      argTypes.append({whole, d.accumulator.getType()});
      argAttrs.append({b.getDictionaryAttr(b.getNamedAttr(
                           DistDialect::kUnshardedGradAttrName, d.name)),
                       b.getDictionaryAttr(b.getNamedAttr(
                           TitanDialect::kGradAttrName, d.name))});
      resultTypes.push_back(d.accumulator.getType());
      resultAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(TitanDialect::kGradAttrName, d.name)));
    }
    auto reduce = func::FuncOp::create(
        b, step.getLoc(), (stageName + "_reduce_grad").str(),
        b.getFunctionType(argTypes, resultTypes));
    reduce.setAllArgAttrs(argAttrs);
    reduce.setAllResultAttrs(resultAttrs);
    for (NamedAttribute attr : step->getDialectAttrs())
      reduce->setAttr(attr.getName(), attr.getValue());
    reduce->setAttr(DistDialect::kPhaseAttrName,
                    b.getStringAttr("reduce_grad"));
    Block *entry = reduce.addEntryBlock();
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(entry);
      SmallVector<Value> results;
      for (auto [i, d] : llvm::enumerate(deferred)) {
        IRMapping map;
        map.map(d.scatter.getInput(), entry->getArgument(2 * unsigned(i)));
        Operation *scatter = b.clone(*d.scatter, map);
        auto wait =
            dist::WaitOp::create(b, d.scatter.getLoc(), scatter->getResult(0));
        results.push_back(AddOp::create(b, d.scatter.getLoc(),
                                        entry->getArgument(2 * i + 1), wait));
      }
      func::ReturnOp::create(b, step.getLoc(), results);
    }

    // <stage>_unshard resets the sums each step.
    auto unshardReturn =
        cast<func::ReturnOp>(unshard.getBody().front().getTerminator());
    SmallVector<Value> unshardResults(unshardReturn.getOperands());
    SmallVector<Attribute> unshardAttrs;
    for (unsigned r = 0; r < unshard.getNumResults(); ++r)
      unshardAttrs.push_back(unshard.getResultAttrDict(r));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(unshardReturn);
      for (Deferred &d : deferred) {
        unshardResults.push_back(FillOp::create(b, d.scatter.getLoc(),
                                                d.scatter.getInput().getType(),
                                                b.getF64FloatAttr(0.0)));
        unshardAttrs.push_back(b.getDictionaryAttr(
            b.getNamedAttr(DistDialect::kUnshardedGradAttrName, d.name)));
      }
      func::ReturnOp::create(b, unshardReturn.getLoc(), unshardResults);
      unshardReturn.erase();
    }
    unshard.setFunctionType(b.getFunctionType(
        unshard.getArgumentTypes(), ValueRange(unshardResults).getTypes()));
    unshard.setAllResultAttrs(unshardAttrs);

    // The step: sum += x instead of gradient += reduce_scatter(x).
    unsigned first = step.getNumArguments();
    SmallVector<unsigned> indices(deferred.size(), first);
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    SmallVector<Location> locs(deferred.size(), step.getLoc());
    for (Deferred &d : deferred) {
      types.push_back(d.scatter.getInput().getType());
      attrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(DistDialect::kUnshardedGradAttrName, d.name)));
    }
    if (failed(step.insertArguments(indices, types, attrs, locs)))
      return failure();
    SmallVector<Value> results;
    SmallVector<Attribute> stepAttrs;
    for (unsigned r = 0; r < ret.getNumOperands(); ++r)
      if (!llvm::is_contained(removed, r)) {
        results.push_back(ret.getOperand(r));
        stepAttrs.push_back(step.getResultAttrDict(r));
      }
    b.setInsertionPoint(ret);
    for (auto [i, d] : llvm::enumerate(deferred)) {
      results.push_back(AddOp::create(b, d.scatter.getLoc(),
                                      body.getArgument(first + unsigned(i)),
                                      d.scatter.getInput()));
      stepAttrs.push_back(b.getDictionaryAttr(
          b.getNamedAttr(DistDialect::kUnshardedGradAttrName, d.name)));
    }
    SmallVector<Operation *> dead;
    for (unsigned r : removed)
      dead.push_back(ret.getOperand(r).getDefiningOp());
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    for (Operation *add : dead) {
      auto wait = add->getOperand(0).getDefiningOp<dist::WaitOp>()
                      ? add->getOperand(0).getDefiningOp<dist::WaitOp>()
                      : add->getOperand(1).getDefiningOp<dist::WaitOp>();
      Operation *scatter = wait.getFuture().getDefiningOp();
      add->erase();
      wait->erase();
      scatter->erase();
    }
    step.setFunctionType(b.getFunctionType(step.getArgumentTypes(),
                                           ValueRange(results).getTypes()));
    step.setAllResultAttrs(stepAttrs);
    return success();
  }

private:
  func::FuncOp step, unshard;
  Block &body;
};

struct DistPipelinePhasesPass
    : titan::dist::impl::DistPipelinePhasesBase<DistPipelinePhasesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps;
    for (auto func : module.getOps<func::FuncOp>())
      if (auto phase =
              func->getAttrOfType<StringAttr>(DistDialect::kPhaseAttrName);
          phase && phase.getValue() == "forward_backward")
        steps.push_back(func);
    if (steps.empty()) {
      module.emitError() << "dist-pipeline-phases: no stage step (a function "
                            "with "
                         << DistDialect::kPhaseAttrName
                         << " = \"forward_backward\"; run titan-autodiff on "
                            "the stages of dist-pipeline-split)";
      return signalPassFailure();
    }
    for (func::FuncOp step : steps) {
      if (!step.getBody().hasOneBlock()) {
        step.emitOpError() << "must have a single block to be split into "
                              "pipeline phases";
        return signalPassFailure();
      }
      StringRef name = step.getSymName();
      std::string stage = name.ends_with("_forward_backward")
                              ? name.drop_back(17).str()
                              : name.str();
      // The stage's forward-only function is replaced by its F phase.
      if (auto forward = module.lookupSymbol<func::FuncOp>(stage))
        if (auto phase =
                forward->getAttrOfType<StringAttr>(DistDialect::kPhaseAttrName);
            phase && phase.getValue() == "forward")
          forward.erase();
      // The deferred gradients' sums are reset in <stage>_unshard, which
      // then exists even when it hoists no value.
      if ((hoistParameterValues || deferGradientReduction) &&
          failed(PerStepHoister(step).run(stage, hoistParameterValues)))
        return signalPassFailure();
      if (deferGradientReduction) {
        auto unshard = module.lookupSymbol<func::FuncOp>(stage + "_unshard");
        if (failed(GradientDeferral(step, unshard).run(stage)))
          return signalPassFailure();
      }
      if (failed(PhaseSplitter(step, splitWeightGrad).run(stage)))
        return signalPassFailure();
    }
  }
};

} // namespace
