//===- OptimizerInBackward.cpp - AdamW as each gradient is final ----------===//
//
// TorchTitan's optimizer.early_step_in_backward as a schedule transformation:
// optimizer_step's per-parameter updates move into forward_backward, where
// each gradient dies with its update (see Passes.td).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Titan/IR/KernelInterface.h"
#include "titan/Dialect/Titan/IR/ModuleNames.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Dialect/Titan/Transforms/GradientNorm.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringMap.h"

namespace titan {
#define GEN_PASS_DEF_TITANOPTIMIZERINBACKWARD
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {

/// One parameter's update as titan-optimizer built it, and where its
/// operands are in forward_backward.
struct Update {
  StringAttr name;
  AdamWOp adamw;       ///< in optimizer_step
  BlockArgument param; ///< forward_backward's
  Value grad;          ///< forward_backward's final gradient
  std::string unit;    ///< getModelUnit(name)
  Operation *ready;    ///< the last op the update must follow
  Operation *at;       ///< the op it is inserted before
};

class UpdateMover {
public:
  UpdateMover(func::FuncOp backward, func::FuncOp step)
      : backward(backward), step(step), b(backward.getContext()),
        body(backward.getBody().front()) {}

  LogicalResult run();

private:
  LogicalResult collectUpdates();
  void placeUpdates();
  LogicalResult addStateArguments();
  void cloneScalars();
  void emitUpdates();
  void rewriteResults();
  void emptyStep();

  /// The op of `body` that `user` is or is nested in.
  Operation *inBody(Operation *user) {
    return body.findAncestorOpInBlock(*user);
  }
  bool before(Operation *a, Operation *b) { return order[a] < order[b]; }
  Operation *lastRead(Value param, Operation *after);

  func::FuncOp backward, step;
  OpBuilder b;
  Block &body;
  DenseMap<Operation *, unsigned> order;
  SmallVector<Update> updates;
  /// optimizer_step's arguments -> forward_backward's values.
  IRMapping map;
  /// The global gradient norm forward_backward now returns.
  Value norm;
};

/// The last op that reads `param`'s buffer, if after `after`, as
/// titan-bufferize sees the reads: its users, through the views that alias
/// it (dist.replicate, titan.reshape, titan.slice), and a collective's
/// wait (a collective reads its input until then).
Operation *UpdateMover::lastRead(Value param, Operation *after) {
  auto readAt = [&](Operation *user) {
    if (Operation *op = inBody(user); op && before(after, op))
      after = op;
  };
  SmallVector<Value> aliases{param};
  while (!aliases.empty()) {
    for (Operation *user : aliases.pop_back_val().getUsers()) {
      readAt(user);
      if (user->hasTrait<titan::OpTrait::BufferView>() || isa<SliceOp>(user))
        aliases.push_back(user->getResult(0));
      for (Value result : user->getResults())
        if (isa<dist::FutureType>(result.getType()))
          for (Operation *wait : result.getUsers())
            readAt(wait);
    }
  }
  return after;
}

LogicalResult UpdateMover::collectUpdates() {
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  llvm::StringMap<Value> grads;
  for (unsigned i = 0, e = backward.getNumResults(); i < e; ++i)
    if (auto name = backward.getResultAttrOfType<StringAttr>(
            i, TitanDialect::kGradAttrName))
      grads[name.getValue()] = ret.getOperand(i);
  for (unsigned i = 0, e = backward.getNumArguments(); i < e; ++i)
    if (backward.getArgAttr(i, TitanDialect::kGradAttrName))
      return backward.emitOpError()
             << "titan-optimizer-in-backward: gradient argument #" << i
             << " accumulates over microbatches; an update in the backward "
                "needs each gradient final after one backward";
  llvm::StringMap<BlockArgument> params;
  for (const ParameterArgument &p : getParameterArguments(backward))
    params[p.name.getValue()] = body.getArgument(p.index);

  unsigned position = 0;
  for (Operation &op : body)
    order[&op] = position++;
  for (AdamWOp adamw : step.getBody().getOps<AdamWOp>()) {
    auto arg = dyn_cast<BlockArgument>(adamw.getParam());
    if (!arg)
      return adamw.emitOpError() << "titan-optimizer-in-backward: updates a "
                                    "value that is not a step argument";
    auto name = step.getArgAttrOfType<StringAttr>(arg.getArgNumber(),
                                                  TitanDialect::kParamAttrName);
    if (!name || !params.count(name) || !grads.count(name))
      return adamw.emitOpError()
             << "titan-optimizer-in-backward: parameter '"
             << (name ? name.getValue() : StringRef("?"))
             << "' is not a parameter of '" << backward.getSymName()
             << "' with a gradient result";
    Update u{name,    adamw,  params[name], grads[name], getModelUnit(name),
             nullptr, nullptr};
    // After the gradient's last definition and the parameter's last read
    // (the old value must be dead before it is overwritten in place).
    u.ready = lastRead(u.param, u.grad.getDefiningOp()
                                    ? inBody(u.grad.getDefiningOp())
                                    : &body.front());
    updates.push_back(u);
  }
  if (updates.empty())
    return step.emitOpError()
           << "titan-optimizer-in-backward: has no titan.adamw to move";
  return success();
}

void UpdateMover::placeUpdates() {
  auto ret = body.getTerminator();
  // Before the first final gradient of another unit after `ready`: one
  // unit later.
  for (Update &u : updates) {
    u.at = ret;
    for (const Update &other : updates) {
      Operation *def = other.grad.getDefiningOp();
      if (!def || other.unit == u.unit)
        continue;
      Operation *op = inBody(def);
      if (before(u.ready, op) && before(op, u.at))
        u.at = op;
    }
  }
}

LogicalResult UpdateMover::addStateArguments() {
  // optimizer_step's arguments: params, grads, exp_avg, exp_avg_sq, step,
  // total_steps (titan-optimizer).
  unsigned first = backward.getNumArguments();
  SmallVector<unsigned> indices;
  SmallVector<Type> types;
  SmallVector<DictionaryAttr> attrs;
  SmallVector<Location> locs;
  SmallVector<BlockArgument> stepArgs;
  for (BlockArgument arg : step.getArguments()) {
    DictionaryAttr a = step.getArgAttrDict(arg.getArgNumber());
    if (a && (a.get(TitanDialect::kParamAttrName) ||
              a.get(TitanDialect::kGradAttrName)))
      continue;
    indices.push_back(first);
    types.push_back(arg.getType());
    attrs.push_back(a);
    locs.push_back(arg.getLoc());
    stepArgs.push_back(arg);
  }
  if (failed(backward.insertArguments(indices, types, attrs, locs)))
    return backward.emitOpError()
           << "titan-optimizer-in-backward: cannot add the optimizer state "
              "arguments";
  for (auto [i, arg] : llvm::enumerate(stepArgs))
    map.map(arg, body.getArgument(first + i));
  for (Update &u : updates) {
    map.map(u.adamw.getParam(), u.param);
    map.map(u.adamw.getGrad(), u.grad);
  }
  return success();
}

void UpdateMover::cloneScalars() {
  // The learning rate and AdamW's scalars at the step's start. With no
  // gradient left for clip_grad_norm_ (TorchTitan's case), the scalars see a
  // zero norm and max_norm 1: clip_coef = min(1, 1 / 1e-6) = 1 exactly.
  b.setInsertionPointToStart(&body);
  Location loc = NameLoc::get(b.getStringAttr("optimizer"));
  for (Operation &op : step.getBody().front()) {
    if (isa<LRScheduleOp>(op))
      b.clone(op, map);
    if (auto scalars = dyn_cast<AdamWScalarsOp>(op)) {
      Value zero = FillOp::create(b, loc, scalars.getGradNorm().getType(),
                                  b.getF64FloatAttr(0.0));
      map.map(scalars.getGradNorm(), zero);
      auto copy = cast<AdamWScalarsOp>(b.clone(op, map));
      copy.setMaxNormAttr(b.getF64FloatAttr(1.0));
    }
  }
}

void UpdateMover::emitUpdates() {
  // Each insertion point's updates in optimizer_step's order, after the
  // squared norms of their gradients (so that the updates stay adjacent).
  // In program order, so that the running sums of squares flow forward.
  llvm::MapVector<Operation *, SmallVector<Update *>> at;
  for (Update &u : updates)
    at[u.at].push_back(&u);
  auto points = at.takeVector();
  llvm::stable_sort(points, [&](const auto &x, const auto &y) {
    return before(x.first, y.first);
  });
  SquaredNormGroups squares;
  for (auto &[op, group] : points) {
    b.setInsertionPoint(op);
    SmallVector<ShardedGradient> grads;
    for (Update *u : group)
      grads.push_back({u->grad, backward.getArgAttrOfType<dist::ShardingAttr>(
                                    u->param.getArgNumber(),
                                    dist::DistDialect::kShardingAttrName)});
    // Pipeline stages are refused (run()).
    addGradientSquares(b, group.front()->adamw.getLoc(), squares, grads,
                       /*pipelined=*/false);
    // Cloning maps the results: the step's return finds the copies.
    for (Update *u : group)
      b.clone(*u->adamw, map);
  }
  b.setInsertionPoint(body.getTerminator());
  norm = buildNormFromSquares(b, NameLoc::get(b.getStringAttr("optimizer")),
                              squares);
}

void UpdateMover::rewriteResults() {
  // forward_backward's results but its gradients, then optimizer_step's
  // (params, exp_avg, exp_avg_sq, grad_norm, lr).
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  auto stepReturn =
      cast<func::ReturnOp>(step.getBody().front().getTerminator());
  SmallVector<Value> results;
  SmallVector<Attribute> attrs;
  for (unsigned i = 0, e = backward.getNumResults(); i < e; ++i) {
    if (backward.getResultAttr(i, TitanDialect::kGradAttrName))
      continue;
    results.push_back(ret.getOperand(i));
    attrs.push_back(backward.getResultAttrDict(i));
  }
  for (unsigned i = 0, e = step.getNumResults(); i < e; ++i) {
    auto output =
        step.getResultAttrOfType<StringAttr>(i, TitanDialect::kOutputAttrName);
    if (output && output.getValue() == "grad_norm")
      results.push_back(norm);
    else
      results.push_back(map.lookup(stepReturn.getOperand(i)));
    attrs.push_back(step.getResultAttrDict(i));
  }
  b.setInsertionPoint(ret);
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  backward.setFunctionType(b.getFunctionType(backward.getArgumentTypes(),
                                             ValueRange(results).getTypes()));
  backward.setAllResultAttrs(attrs);
}

void UpdateMover::emptyStep() {
  Block &stepBody = step.getBody().front();
  while (!stepBody.empty())
    stepBody.back().erase();
  stepBody.eraseArguments(0, stepBody.getNumArguments());
  step.setFunctionType(b.getFunctionType({}, {}));
  step.removeArgAttrsAttr();
  step.removeResAttrsAttr();
  b.setInsertionPointToEnd(&stepBody);
  func::ReturnOp::create(b, step.getLoc());
}

LogicalResult UpdateMover::run() {
  if (backward->hasAttr(dist::DistDialect::kStageAttrName))
    return backward.emitOpError()
           << "titan-optimizer-in-backward: is a pipeline stage (TorchTitan "
              "refuses optimizers in backward with pipeline parallelism)";
  if (failed(collectUpdates()))
    return failure();
  placeUpdates();
  if (failed(addStateArguments()))
    return failure();
  cloneScalars();
  emitUpdates();
  rewriteResults();
  emptyStep();
  return backward.verify();
}

struct TitanOptimizerInBackwardPass
    : titan::impl::TitanOptimizerInBackwardBase<TitanOptimizerInBackwardPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp backward =
        lookupFunction(module, backwardName, "titan-optimizer-in-backward");
    func::FuncOp step = backward ? lookupFunction(module, stepName,
                                                  "titan-optimizer-in-backward")
                                 : func::FuncOp();
    if (!step || failed(UpdateMover(backward, step).run()))
      return signalPassFailure();
  }
};

} // namespace
