//===- ExpandFloat8.cpp - float8 GEMMs as casts and scaled GEMMs ----------===//
//
// torchao's Float8LinearConfig per recipe, GEMM by GEMM: how each operand is
// cast (float8 type, scaling granularity, power-of-two scales, and the
// K-major layout where the GEMM reduces the operand over its leading
// dimensions), then the scaled GEMM (or, for rowwise_with_gw_hp's weight
// gradient, the high-precision one).
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Dialect/Titan/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <algorithm>

namespace titan {
#define GEN_PASS_DEF_TITANEXPANDFLOAT8
#include "titan/Dialect/Titan/Transforms/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;

namespace {

/// How one GEMM operand is cast.
enum class Scaling { Tensorwise, Rows, Columns };
struct Cast {
  Scaling scaling;
  bool e5m2 = false;
  bool powerOf2 = false;
};

/// One cast operand: its float8 copy, its scale, and whether the copy is
/// transposed (titan.quantize's K-major layout).
struct Scaled {
  Value value, scale;
  bool transposed = false;
};

/// The FSDP shard a gathered weight comes from: `v` is
/// wait(all_gather_start(shard)) or a cast of it (mixed precision), and
/// `shard` is a parameter argument.
struct GatheredWeight {
  Value shard;
  dist::AllGatherStartOp gather;
};
std::optional<GatheredWeight> gatheredWeight(Value v) {
  if (auto cast = v.getDefiningOp<CastOp>())
    v = cast.getInput();
  auto wait = v.getDefiningOp<dist::WaitOp>();
  auto gather = wait ? wait.getFuture().getDefiningOp<dist::AllGatherStartOp>()
                     : dist::AllGatherStartOp();
  if (!gather)
    return std::nullopt;
  auto arg = dyn_cast<BlockArgument>(gather.getInput());
  auto func = arg ? dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp())
                  : func::FuncOp();
  if (!func ||
      !func.getArgAttr(arg.getArgNumber(), TitanDialect::kParamAttrName))
    return std::nullopt;
  return GatheredWeight{arg, gather};
}

/// What the expansion of one function shares between its ops: the float8
/// all-gather option, each shard's scale (a parameter's amax is the same
/// all step, so the backward's re-gather reuses the forward's), and the
/// casts already made. One value cast one way is cast once, however many
/// GEMMs read it (attention's q, k and v projections read one input; a
/// gradient's amax serves both its GEMMs): torchao casts per GEMM, to the
/// same bits, so sharing changes no result, only the kernels run.
struct ExpansionState {
  bool fsdpFloat8AllGather = false;
  DenseMap<Value, Value> shardScales;
  /// (value, its type, scaling, the axes its amax is all-reduced over) ->
  /// amax. A weight FSDP gathers is keyed by its shard: the backward's
  /// re-gather holds the forward's values.
  DenseMap<std::tuple<Value, Type, int, Attribute>, Value> amaxes;
  /// (amax, float8 type, power of 2) -> scale.
  DenseMap<std::tuple<Value, Type, int>, Value> scales;
  /// (value, scale, float8 type, transposed) -> float8 copy.
  DenseMap<std::tuple<Value, Value, Type, int>, Value> casts;
  /// The float8 all-gather replacing each high-precision gather: the GEMMs
  /// that read one gathered weight read one float8 gather of it.
  DenseMap<Operation *, Value> float8Gathers;
  DominanceInfo *dominance = nullptr;
  /// Values -> the earlier values they equal (memoized). Every key
  /// dominates a float8 op being expanded, and the pass erases ops only
  /// after the last lookup, so no key is ever an erased value.
  DenseMap<Value, Value> originals;

  /// The earliest value known to equal `v`: activation checkpointing's
  /// recompute copies the forward's ops onto the same values, and FSDP's
  /// re-gather gathers the same shard, so a recomputed activation has the
  /// forward's bits. The recompute's casts then reuse the forward's amax
  /// and scale: an activation's amax is not computed twice.
  Value originalOf(Value v) {
    auto result = dyn_cast<OpResult>(v);
    Operation *op = result ? result.getOwner() : nullptr;
    if (!op || op->getNumOperands() == 0 || !mayCopy(op))
      return v;
    if (auto it = originals.find(v); it != originals.end())
      return it->second;
    SmallVector<Value> operands = llvm::map_to_vector(
        op->getOperands(), [&](Value operand) { return originalOf(operand); });
    Value found = v;
    for (Operation *user : operands.front().getUsers())
      if (user != op && isTwin(user, op, operands) &&
          dominance->properlyDominates(user, op)) {
        found = user->getResult(result.getResultNumber());
        break;
      }
    originals[v] = found;
    return found;
  }

  /// Whether `op` may copy an earlier op: a recomputed pure op, a gather
  /// (a re-gather of the same shards, its wait and casts), or what this
  /// pass built on recomputed values (their casts and scaled GEMMs). Its
  /// results depend only on its operands and attributes. Any other op is
  /// an original (a forward op is its own), which keeps each search within
  /// one recompute region.
  static bool mayCopy(Operation *op) {
    if (op->getNumRegions() != 0)
      return false;
    if (auto wait = dyn_cast<dist::WaitOp>(op))
      return bool(wait.getFuture().getDefiningOp<dist::AllGatherStartOp>());
    if (isa<dist::AllGatherStartOp, CastOp, AmaxOp, Float8ScaleOp, QuantizeOp,
            ScaledMatmulOp>(op))
      return true;
    return op->hasAttr(TitanDialect::kRecomputedAttrName) && isPure(op);
  }

  /// Whether `op` computes what `other` does: the same op on `operands`
  /// (the originals of `other`'s), with the same attributes but the
  /// recompute marks.
  static bool isTwin(Operation *op, Operation *other, ValueRange operands) {
    if (op->getName() != other->getName() ||
        op->getResultTypes() != other->getResultTypes() ||
        !llvm::equal(op->getOperands(), operands))
      return false;
    auto unmarked = [](Operation *o) {
      SmallVector<NamedAttribute> attrs;
      llvm::copy_if(
          o->getAttrs(), std::back_inserter(attrs), [](NamedAttribute a) {
            return a.getName() != TitanDialect::kRecomputedAttrName &&
                   a.getName() != TitanDialect::kRecomputeRegionAttrName &&
                   a.getName() != TitanDialect::kSaveAttrName;
          });
      return attrs;
    };
    return unmarked(op) == unmarked(other);
  }

  /// `memo[key]` when it exists and dominates `at`, else `make()`'s result,
  /// remembered.
  template <typename Key, typename Make>
  Value reuseOr(DenseMap<Key, Value> &memo, Key key, Operation *at, Make make) {
    auto it = memo.find(key);
    if (it != memo.end() && dominance->properlyDominates(it->second, at))
      return it->second;
    Value v = make();
    memo[key] = v;
    return v;
  }
};

class Float8Expander {
public:
  Float8Expander(OpBuilder &b, Operation *op, ExpansionState &state)
      : b(b), op(op), state(state) {
    auto dims = op->getAttrOfType<DenseI64ArrayAttr>("split_dims");
    axes = op->getAttrOfType<ArrayAttr>("split_axes");
    if (dims)
      split.assign(dims.asArrayRef().begin(), dims.asArrayRef().end());
    else
      split.assign(3, -1);
  }

  /// `v` (operand `index` of the op) cast as `how` says, written
  /// transposed when `transposed` asks for it and the float8 all-gather
  /// (which gathers rows) does not stand in the way.
  Scaled scale(Value v, unsigned index, Cast how, bool transposed) {
    if (state.fsdpFloat8AllGather && how.scaling == Scaling::Tensorwise)
      if (std::optional<GatheredWeight> w = gatheredWeight(v))
        return gatherInFloat8(*w, index, how);
    Location loc = op->getLoc();
    auto type = cast<RankedTensorType>(v.getType());
    int64_t rank = type.getRank();
    SmallVector<int64_t> dims, shape;
    if (how.scaling == Scaling::Rows)
      dims.push_back(rank - 1);
    else if (how.scaling == Scaling::Columns)
      for (int64_t d = 0; d + 1 < rank; ++d)
        dims.push_back(d);
    if (how.scaling != Scaling::Tensorwise) {
      shape.assign(type.getShape().begin(), type.getShape().end());
      for (int64_t d : dims)
        shape[d] = 1;
    }
    auto f32 = RankedTensorType::get(shape, b.getF32Type());
    // The whole tensor's amax when the operand is split along a reduced
    // dimension.
    int64_t splitDim = split[index];
    Attribute reduceOver;
    if (splitDim >= 0 && axes &&
        (how.scaling == Scaling::Tensorwise ||
         llvm::is_contained(dims, splitDim)))
      reduceOver = axes;
    std::optional<GatheredWeight> weight = gatheredWeight(v);
    Value amax = state.reuseOr(
        state.amaxes,
        std::make_tuple(weight ? weight->shard : state.originalOf(v),
                        v.getType(), int(how.scaling), reduceOver),
        op, [&]() -> Value {
          Value amax = AmaxOp::create(b, loc, f32, v,
                                      how.scaling == Scaling::Tensorwise
                                          ? DenseI64ArrayAttr()
                                          : b.getDenseI64ArrayAttr(dims));
          if (!reduceOver)
            return amax;
          auto future = dist::AllReduceStartOp::create(
              b, loc, dist::FutureType::get(b.getContext(), f32), amax, axes,
              dist::ReductionKind::Max);
          return dist::WaitOp::create(b, loc, future);
        });
    Type f8 = how.e5m2 ? Type(b.getType<Float8E5M2Type>())
                       : Type(b.getType<Float8E4M3FNType>());
    Value s = state.reuseOr(
        state.scales, std::make_tuple(amax, f8, int(how.powerOf2)), op, [&] {
          return Float8ScaleOp::create(b, loc, f32, amax, TypeAttr::get(f8),
                                       how.powerOf2 ? b.getUnitAttr()
                                                    : UnitAttr());
        });
    SmallVector<int64_t> qShape(type.getShape());
    if (transposed && !qShape.empty())
      std::rotate(qShape.begin(), qShape.end() - 1, qShape.end());
    Value q = state.reuseOr(
        state.casts, std::make_tuple(v, s, f8, int(transposed)), op, [&] {
          return QuantizeOp::create(b, loc, type.clone(qShape, f8), v, s,
                                    transposed);
        });
    return {q, s, transposed};
  }

  /// torchao's float8 all-gather (enable_fsdp_float8_all_gather): each
  /// rank casts its f32 shard with the whole weight's scale (the shards'
  /// amaxes all-reduced over the gather's axes and any tensor-parallel
  /// split), and FSDP gathers the float8 copies.
  Scaled gatherInFloat8(GatheredWeight w, unsigned index, Cast how) {
    Location loc = op->getLoc();
    auto shardType = cast<RankedTensorType>(w.shard.getType());
    Value &s = state.shardScales[w.shard];
    if (!s) {
      // Computed at the shard's first use; its later uses (the backward's
      // re-gather) come after it in the function.
      auto scalar = RankedTensorType::get({}, b.getF32Type());
      Value amax = AmaxOp::create(b, loc, scalar, w.shard, DenseI64ArrayAttr());
      SmallVector<Attribute> axes(w.gather.getAxes().begin(),
                                  w.gather.getAxes().end());
      if (split[index] >= 0 && this->axes)
        for (Attribute a : this->axes)
          if (!llvm::is_contained(axes, a))
            axes.push_back(a);
      auto future = dist::AllReduceStartOp::create(
          b, loc, dist::FutureType::get(b.getContext(), scalar), amax,
          b.getArrayAttr(axes), dist::ReductionKind::Max);
      amax = dist::WaitOp::create(b, loc, future);
      s = Float8ScaleOp::create(b, loc, scalar, amax,
                                TypeAttr::get(b.getType<Float8E4M3FNType>()),
                                how.powerOf2 ? b.getUnitAttr() : UnitAttr());
    }
    Value &gathered = state.float8Gathers[w.gather];
    if (!gathered) {
      Type f8 = b.getType<Float8E4M3FNType>();
      Value q = QuantizeOp::create(b, loc, shardType.clone(f8), w.shard, s);
      auto full = cast<RankedTensorType>(op->getOperand(index).getType());
      auto start = dist::AllGatherStartOp::create(
          b, loc, dist::FutureType::get(b.getContext(), full.clone(f8)), q,
          w.gather.getAxes(), w.gather.getDimAttr());
      gathered = dist::WaitOp::create(b, loc, start);
    }
    return {gathered, s, false};
  }

  /// The op's GEMM `form` on its two operands, cast as `lhsCast` and
  /// `rhsCast` say (the left one first). An operand the form reduces over
  /// its leading dimensions (grad_input's rhs, grad_weight's both) is cast
  /// transposed, K-major as cuBLASLt's FP8 GEMM takes it, so the GEMM
  /// copies nothing.
  Value gemm(GemmForm form, Cast lhsCast, Cast rhsCast) {
    Scaled lhs =
        scale(op->getOperand(0), 0, lhsCast, form == GemmForm::GradWeight);
    Scaled rhs = scale(op->getOperand(1), 1, rhsCast, form != GemmForm::Linear);
    return ScaledMatmulOp::create(b, op->getLoc(), op->getResult(0).getType(),
                                  lhs.value, lhs.scale, rhs.value, rhs.scale,
                                  form, lhs.transposed, rhs.transposed);
  }

private:
  OpBuilder &b;
  Operation *op;
  ExpansionState &state;
  SmallVector<int64_t> split;
  ArrayAttr axes;
};

constexpr Cast kE4M3 = {Scaling::Tensorwise, false, false};
constexpr Cast kE5M2 = {Scaling::Tensorwise, true, false};

Value expand(OpBuilder &b, Float8LinearOp op, ExpansionState &state) {
  Float8Expander e(b, op, state);
  if (op.getRecipe() == Float8Recipe::Tensorwise)
    return e.gemm(GemmForm::Linear, kE4M3, kE4M3);
  // rowwise, rowwise_with_gw_hp: one scale per row along K for both.
  Cast rows = {Scaling::Rows, false, true};
  return e.gemm(GemmForm::Linear, rows, rows);
}

Value expand(OpBuilder &b, Float8LinearGradInputOp op, ExpansionState &state) {
  Float8Expander e(b, op, state);
  Float8Recipe recipe = op.getRecipe();
  if (recipe == Float8Recipe::Tensorwise)
    return e.gemm(GemmForm::GradInput, kE5M2, kE4M3);
  // dY per row (along N); W per column along N (rowwise) or one scale
  // (rowwise_with_gw_hp).
  Cast rows = {Scaling::Rows, false, true};
  Cast weight = recipe == Float8Recipe::Rowwise
                    ? Cast{Scaling::Columns, false, true}
                    : Cast{Scaling::Tensorwise, false, true};
  return e.gemm(GemmForm::GradInput, rows, weight);
}

Value expand(OpBuilder &b, Float8LinearGradWeightOp op, ExpansionState &state) {
  Float8Recipe recipe = op.getRecipe();
  if (recipe == Float8Recipe::RowwiseWithGwHp)
    return LinearGradWeightOp::create(b, op.getLoc(), op.getType(),
                                      op.getGrad(), op.getInput());
  Float8Expander e(b, op, state);
  if (recipe == Float8Recipe::Tensorwise)
    return e.gemm(GemmForm::GradWeight, kE5M2, kE4M3);
  // Both per column, along the tokens.
  Cast columns = {Scaling::Columns, false, true};
  return e.gemm(GemmForm::GradWeight, columns, columns);
}

struct TitanExpandFloat8Pass
    : titan::impl::TitanExpandFloat8Base<TitanExpandFloat8Pass> {
  using Base::Base;

  void runOnOperation() override {
    OpBuilder b(&getContext());
    getOperation().walk([&](func::FuncOp func) {
      SmallVector<Operation *> ops;
      func.walk([&](Operation *op) {
        if (isa<Float8LinearOp, Float8LinearGradInputOp,
                Float8LinearGradWeightOp>(op))
          ops.push_back(op);
      });
      DominanceInfo dominance(func);
      ExpansionState state;
      state.fsdpFloat8AllGather = fsdpFloat8AllGather;
      state.dominance = &dominance;
      SmallVector<Operation *> replaced;
      for (Operation *op : ops) {
        b.setInsertionPoint(op);
        Value result;
        if (auto linear = dyn_cast<Float8LinearOp>(op))
          result = expand(b, linear, state);
        else if (auto gradInput = dyn_cast<Float8LinearGradInputOp>(op))
          result = expand(b, gradInput, state);
        else
          result = expand(b, cast<Float8LinearGradWeightOp>(op), state);
        op->getResult(0).replaceAllUsesWith(result);
        for (Value operand : op->getOperands())
          if (Operation *def = operand.getDefiningOp())
            replaced.push_back(def);
        op->erase();
      }
      // The high-precision gathers the float8 ones replace (and their
      // casts), once nothing reads them (each op visited once: two float8
      // ops may read one gather).
      DenseSet<Operation *> erased;
      while (!replaced.empty()) {
        Operation *def = replaced.pop_back_val();
        if (erased.contains(def) || !def->use_empty() ||
            !isa<CastOp, dist::WaitOp, dist::AllGatherStartOp>(def))
          continue;
        for (Value operand : def->getOperands())
          if (Operation *up = operand.getDefiningOp())
            replaced.push_back(up);
        erased.insert(def);
        def->erase();
      }
    });
  }
};

} // namespace
