//===- BatchParameterAmaxes.cpp - parameters' amaxes in one all-reduce ----===//
//
// A sharded parameter's float8 amax (its shard's amax, maximised over the
// ranks) depends on nothing the step computes. Computed at the step's start,
// all in one all-reduce (TorchTitan's precompute_float8_dynamic_scale_for_
// fsdp), the scales are known before the forward's gathers: FSDP can gather
// float8 copies there too (dist-narrow-gathers), and no scale waits on a
// collective queued behind the gathers.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTBATCHPARAMETERAMAXES
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

/// A parameter's tensorwise amax, maximised over `reduce`'s ranks.
struct ParameterAmax {
  titan::AmaxOp amax;
  AllReduceStartOp reduce;
  WaitOp wait;
  /// The parameter, and the casts from it to the amax's input (last first).
  BlockArgument parameter;
  SmallVector<CastOp> casts;

  /// What the amax reads: the parameter through each cast's type in
  /// order (one element serves every amax of the same reading).
  std::pair<Value, SmallVector<Type>> reading() const {
    SmallVector<Type> types;
    for (CastOp c : llvm::reverse(casts))
      types.push_back(c.getType());
    return {parameter, types};
  }
};

/// Whether FSDP gathers `parameter` (or a cast of it, float8 included):
/// only then does its amax, maximised over the shards, pay its read at the
/// step's start (the forward's gathers become float8 ones); an unsharded
/// weight's amax stays fused into the cast that reads it anyway.
bool isGathered(Value parameter) {
  return llvm::any_of(parameter.getUses(), [](OpOperand &use) {
    Operation *user = use.getOwner();
    if (isa<AllGatherStartOp>(user))
      return true;
    // A cast, or a float8 cast of the shard (torchao's float8 all-gather).
    auto q = dyn_cast<QuantizeOp>(user);
    if (q && use.getOperandNumber() == 0)
      return isGathered(q.getResult());
    auto c = dyn_cast<CastOp>(user);
    return c && isGathered(c.getResult());
  });
}

/// `amax` as a gathered parameter's amax all-reduced by maximum, if it is
/// one: a tensorwise amax of casts of a `titan.param` argument of `entry`,
/// whose only user is an all-reduce start (max) waited for in `entry`.
std::optional<ParameterAmax> matchParameterAmax(func::FuncOp func,
                                                titan::AmaxOp amax) {
  Block &entry = func.getBody().front();
  if (amax.getDims() || !amax->hasOneUse() || amax->getBlock() != &entry)
    return std::nullopt;
  auto reduce = dyn_cast<AllReduceStartOp>(*amax->getUsers().begin());
  if (!reduce || reduce.getReduction() != ReductionKind::Max ||
      !reduce->hasOneUse())
    return std::nullopt;
  auto wait = dyn_cast<WaitOp>(*reduce->getUsers().begin());
  if (!wait || wait->getBlock() != &entry)
    return std::nullopt;
  ParameterAmax p{amax, reduce, wait, nullptr, {}};
  Value v = amax.getInput();
  while (auto c = v.getDefiningOp<CastOp>()) {
    if (c->getBlock() != &entry)
      return std::nullopt;
    p.casts.push_back(c);
    v = c.getInput();
  }
  auto arg = dyn_cast<BlockArgument>(v);
  if (!arg || arg.getOwner() != &entry ||
      !func.getArgAttr(arg.getArgNumber(), TitanDialect::kParamAttrName) ||
      !isGathered(arg))
    return std::nullopt;
  p.parameter = arg;
  return p;
}

/// The amax of `p`'s parameter through its casts, built at `b`'s point.
Value buildAmax(OpBuilder &b, const ParameterAmax &p) {
  Value v = p.parameter;
  for (CastOp c : llvm::reverse(p.casts))
    v = CastOp::create(b, c.getLoc(), c.getType(), v);
  titan::AmaxOp amax = p.amax;
  return titan::AmaxOp::create(b, amax.getLoc(), amax.getType(), v,
                               DenseI64ArrayAttr());
}

/// One all-reduce of `group`'s amaxes at `b`'s point: each amax as one
/// element of a vector, each member's value a one-element slice of the
/// result. Float8 scales computed from them move up with them. The ops
/// they replace go to `dead` (erased once every group is built: `b`'s
/// point may be one of them).
void batch(OpBuilder &b, ArrayRef<ParameterAmax> group,
           SmallVectorImpl<Operation *> &dead) {
  AllReduceStartOp first = group.front().reduce;
  Location loc = first.getLoc();
  auto one = RankedTensorType::get({1}, b.getF32Type());
  SmallVector<std::pair<Value, SmallVector<Type>>> readings;
  SmallVector<Value> elements;
  auto slotOf = [&](const ParameterAmax &p) {
    return unsigned(llvm::find(readings, p.reading()) - readings.begin());
  };
  for (const ParameterAmax &p : group) {
    if (slotOf(p) < readings.size())
      continue;
    readings.push_back(p.reading());
    elements.push_back(ReshapeOp::create(b, loc, one, buildAmax(b, p)));
  }
  auto vector =
      RankedTensorType::get({int64_t(elements.size())}, b.getF32Type());
  Value all = elements.size() == 1
                  ? elements.front()
                  : ConcatOp::create(b, loc, vector, elements, 0).getResult();
  auto start = AllReduceStartOp::create(
      b, loc,
      FutureType::get(b.getContext(), cast<RankedTensorType>(all.getType())),
      all, first.getAxesAttr(), ReductionKind::Max);
  Value reduced = WaitOp::create(b, loc, start);
  for (const ParameterAmax &p : group) {
    Value element = reduced;
    if (elements.size() > 1)
      element = SliceOp::create(b, loc, one, reduced,
                                b.getDenseI64ArrayAttr({int64_t(slotOf(p))}));
    titan::AmaxOp amax = p.amax;
    Value value = ReshapeOp::create(b, loc, amax.getType(), element);
    WaitOp wait = p.wait;
    for (Operation *user : llvm::make_early_inc_range(wait->getUsers()))
      if (isa<Float8ScaleOp>(user))
        user->moveAfter(value.getDefiningOp());
    wait.getResult().replaceAllUsesWith(value);
    dead.append({wait, p.reduce, amax});
    dead.append(p.casts.begin(), p.casts.end());
  }
}

/// Erases `dead` (waits, starts, amaxes, then the casts that fed only
/// them: a cast may feed several, or something else too). The casts go
/// last first: all in the entry block, each after what it reads, so a
/// cast's dead users are gone when its turn comes.
void eraseDead(ArrayRef<Operation *> dead) {
  llvm::SetVector<Operation *> casts;
  for (Operation *op : dead) {
    if (isa<CastOp>(op))
      casts.insert(op);
    else
      op->erase();
  }
  SmallVector<Operation *> lastFirst(casts.begin(), casts.end());
  llvm::sort(lastFirst,
             [](Operation *a, Operation *b) { return b->isBeforeInBlock(a); });
  for (Operation *c : lastFirst)
    if (c->use_empty())
      c->erase();
}

struct DistBatchParameterAmaxesPass
    : titan::dist::impl::DistBatchParameterAmaxesBase<
          DistBatchParameterAmaxesPass> {
  void runOnOperation() override {
    OpBuilder b(&getContext());
    getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal())
        return;
      Block &entry = func.getBody().front();
      // Grouped by the ranks they reduce over, in program order.
      llvm::MapVector<Attribute, SmallVector<ParameterAmax>> groups;
      for (auto amax : entry.getOps<titan::AmaxOp>())
        if (std::optional<ParameterAmax> p = matchParameterAmax(func, amax))
          groups[p->reduce.getAxesAttr()].push_back(*p);
      SmallVector<Operation *> dead;
      b.setInsertionPointToStart(&entry);
      for (auto &[axes, group] : groups)
        batch(b, group, dead);
      eraseDead(dead);
    });
  }
};

} // namespace
