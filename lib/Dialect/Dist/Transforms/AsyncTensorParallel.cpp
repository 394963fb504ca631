//===- AsyncTensorParallel.cpp - collective matmuls for sequence parallel -===//
//
// dist-async-tensor-parallel: sequence parallel's tp gathers feeding GEMMs
// and GEMMs feeding tp reduce-scatters become dist.all_gather_linear and
// dist.linear_reduce_scatter (Float8's tensorwise scaled GEMMs:
// dist.all_gather_scaled_matmul and dist.scaled_matmul_reduce_scatter),
// whose kernels overlap the ring's transfers with the GEMMs
// (docs/sharding.md, "Async tensor parallel").
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Dist/Transforms/Passes.h"
#include "titan/Dialect/Titan/IR/Dtype.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTASYNCTENSORPARALLEL
#include "titan/Dialect/Dist/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

/// The most GEMMs one collective matmul takes (the verifiers' and the
/// kernels' limit, KernelCatalog.def).
constexpr size_t kMaxGemms = 16;

/// The ring's axes: tensor parallel's alone.
bool isTensorParallel(ArrayAttr axes) {
  if (axes.size() != 1)
    return false;
  std::optional<mesh::Axis> axis =
      mesh::parseAxis(cast<StringAttr>(axes[0]).getValue());
  return axis && mesh::axisInfo(*axis).tensor;
}

/// A GEMM the collective matmuls cover: its left operand, its weight, and
/// whether it is linear_grad_input's product.
struct Gemm {
  Operation *op = nullptr;
  Value lhs, weight;
  bool gradInput = false;
};
std::optional<Gemm> asGemm(Operation *op) {
  if (auto linear = dyn_cast_or_null<LinearOp>(op))
    return Gemm{op, linear.getInput(), linear.getWeight(), false};
  if (auto grad = dyn_cast_or_null<LinearGradInputOp>(op))
    return Gemm{op, grad.getGrad(), grad.getWeight(), true};
  return std::nullopt;
}

bool isGemmLike(Operation *op) {
  return asGemm(op) || isa<ScaledMatmulOp, LinearGradWeightOp>(op);
}

/// A scaled GEMM the Float8 collective matmuls cover: linear's or
/// grad_input's form on an untransposed lhs with one (tensorwise) scale or,
/// `rowScales` (the reduce-scatter, whose shards are row blocks of the
/// lhs), one scale per lhs row (rowwise).
ScaledMatmulOp asRingScaledGemm(Operation *op, bool rowScales = false) {
  auto gemm = dyn_cast_or_null<ScaledMatmulOp>(op);
  if (!gemm || gemm.getForm() == GemmForm::GradWeight ||
      gemm.getLhsTransposed())
    return {};
  auto scale = cast<RankedTensorType>(gemm.getLhsScale().getType());
  if (scale.getRank() != 0 &&
      !(rowScales && ScaledMatmulReduceScatterOp::isRowScale(
                         gemm.getLhs().getType(), scale)))
    return {};
  return gemm;
}

/// Whether two scaled GEMMs can share one collective matmul: the same form
/// and weight layout, and the same lhs and weight formats (one kernel
/// parameter each) and result type (one entry point's dtype).
bool sameRingKind(ScaledMatmulOp a, ScaledMatmulOp b) {
  auto element = [](Value v) {
    return cast<ShapedType>(v.getType()).getElementType();
  };
  return a.getForm() == b.getForm() &&
         a.getRhsTransposed() == b.getRhsTransposed() &&
         element(a.getLhs()) == element(b.getLhs()) &&
         element(a.getRhs()) == element(b.getRhs()) &&
         element(a.getResult()) == element(b.getResult());
}

/// Whether `v` is available at `point` (same block: defined before it).
bool dominates(Value v, Operation *point) {
  if (auto arg = dyn_cast<BlockArgument>(v))
    return arg.getOwner() == point->getBlock();
  Operation *def = v.getDefiningOp();
  return def->getBlock() == point->getBlock() && def->isBeforeInBlock(point);
}

struct DistAsyncTensorParallelPass
    : titan::dist::impl::DistAsyncTensorParallelBase<
          DistAsyncTensorParallelPass> {
  void runOnOperation() override {
    SmallVector<AllGatherStartOp> gathers;
    SmallVector<ReduceScatterStartOp> scatters;
    getOperation().walk([&](Operation *op) {
      if (auto g = dyn_cast<AllGatherStartOp>(op))
        gathers.push_back(g);
      else if (auto s = dyn_cast<ReduceScatterStartOp>(op))
        scatters.push_back(s);
    });
    for (AllGatherStartOp g : gathers)
      fuseGather(g);
    for (ReduceScatterStartOp s : scatters)
      fuseScatter(s);
  }

  /// The wait of a collective's future (verified: exactly one).
  static WaitOp waitOf(Operation *start) {
    for (Operation *user : start->getResult(0).getUsers())
      if (auto wait = dyn_cast<WaitOp>(user))
        return wait;
    return {};
  }

  void fuseGather(AllGatherStartOp start) {
    WaitOp wait = waitOf(start);
    if (!wait || !isTensorParallel(start.getAxes()))
      return;
    Value gathered = wait.getResult();
    if (isFloat8Type(cast<ShapedType>(gathered.getType()).getElementType()))
      return fuseFloat8Gather(start, wait);
    // Float8 (rowwise) quantizes the gathered value for its scaled GEMMs.
    bool float8 = llvm::any_of(gathered.getUsers(), llvm::IsaPred<QuantizeOp>);
    bool feedsGemm = llvm::any_of(gathered.getUsers(), isGemmLike);
    if (!feedsGemm && !float8)
      return;
    auto in = cast<RankedTensorType>(start.getInput().getType());
    auto out = cast<RankedTensorType>(gathered.getType());
    int64_t dim = start.getDim();
    int64_t group = getGroupSize(getMesh(start), start.getAxes());
    if (dim >= in.getRank() - 1) {
      start.emitRemark() << "async TP: not fused with its GEMMs: the gather "
                            "runs along their contracted (last) dimension";
      return;
    }
    if (out.getDimSize(dim) != group * in.getDimSize(dim))
      return; // uneven shards: not sequence parallel's
    // The GEMMs reading the gathered value as their rows, of the first
    // one's kind, whose weights are there at the wait.
    SmallVector<Gemm> gemms;
    bool declined = false;
    for (Operation &op : llvm::make_range(std::next(wait->getIterator()),
                                          wait->getBlock()->end())) {
      std::optional<Gemm> gemm = asGemm(&op);
      if (!gemm || gemm->lhs != gathered || gemm->weight == gathered)
        continue;
      if (gemms.size() == kMaxGemms ||
          (!gemms.empty() && gemm->gradInput != gemms.front().gradInput))
        continue;
      if (!dominates(gemm->weight, wait)) {
        declined = true;
        continue;
      }
      gemms.push_back(*gemm);
    }
    if (gemms.empty()) {
      start.emitRemark() << "async TP: not fused: no titan.linear or "
                            "titan.linear_grad_input reads the gathered "
                            "value with its weight computed before the wait"
                         << (float8 ? " (Float8's scaled GEMMs are fused "
                                      "where the gather moves float8: "
                                      "tensorwise scales)"
                                    : "");
      return;
    }
    if (declined)
      start.emitRemark() << "async TP: some GEMMs' weights are computed after "
                            "the gather's wait; they read the gathered value";
    OpBuilder b(wait);
    SmallVector<Value> weights;
    SmallVector<Type> types{gathered.getType()};
    for (const Gemm &gemm : gemms) {
      weights.push_back(gemm.weight);
      types.push_back(gemm.op->getResult(0).getType());
    }
    auto fused = AllGatherLinearOp::create(
        b, gemms.front().op->getLoc(), types, start.getInput(), weights,
        start.getAxesAttr(), start.getDimAttr(),
        gemms.front().gradInput ? b.getUnitAttr() : UnitAttr());
    for (auto [i, gemm] : llvm::enumerate(gemms)) {
      gemm.op->getResult(0).replaceAllUsesWith(fused.getOutputs()[i]);
      gemm.op->erase();
    }
    gathered.replaceAllUsesWith(fused.getGathered());
    wait.erase();
    start.erase();
  }

  /// Whether every reader of `gathered` and of the results of `gemms`
  /// comes after `point`, other than those GEMMs and `next` (which the
  /// fused op replaces).
  static bool readersAfter(Value gathered, ArrayRef<ScaledMatmulOp> gemms,
                           ScaledMatmulOp next, Operation *point) {
    llvm::SmallPtrSet<Operation *, 8> fused{next};
    for (ScaledMatmulOp gemm : gemms)
      fused.insert(gemm);
    auto after = [&](Value v) {
      return llvm::all_of(v.getUsers(), [&](Operation *user) {
        return fused.contains(user) || (user->getBlock() == point->getBlock() &&
                                        point->isBeforeInBlock(user));
      });
    };
    // `next`'s own readers follow it, so after `point` (its operands' last
    // definition).
    return after(gathered) && llvm::all_of(gemms, [&](ScaledMatmulOp g) {
             return after(g.getResult());
           });
  }

  /// A float8 gather (dist-narrow-gathers cast each shard) and the scaled
  /// GEMMs reading the gathered value as their rows, with one scale, of
  /// the first one's kind, whose weights and scales are there at the wait.
  /// Other readers (the backward's transposed copy) read the fused op's
  /// gathered value.
  void fuseFloat8Gather(AllGatherStartOp start, WaitOp wait) {
    Value gathered = wait.getResult();
    auto in = cast<RankedTensorType>(start.getInput().getType());
    auto out = cast<RankedTensorType>(gathered.getType());
    int64_t dim = start.getDim();
    if (dim >= in.getRank() - 1) {
      start.emitRemark() << "async TP: not fused with its scaled GEMMs: the "
                            "gather runs along their contracted (last) "
                            "dimension";
      return;
    }
    int64_t group = getGroupSize(getMesh(start), start.getAxes());
    if (out.getDimSize(dim) != group * in.getDimSize(dim))
      return; // uneven shards: not sequence parallel's
    // The fused op goes after `at`: the wait, or later where a GEMM's
    // weight or scales are computed after it (a weight's cast, which reads
    // nothing gathered), when nothing before that point reads the gathered
    // value or an accepted GEMM's result.
    SmallVector<ScaledMatmulOp> gemms;
    Operation *at = wait;
    bool declined = false;
    for (Operation &op : llvm::make_range(std::next(wait->getIterator()),
                                          wait->getBlock()->end())) {
      ScaledMatmulOp gemm = asRingScaledGemm(&op);
      if (!gemm || gemm.getLhs() != gathered || gemm.getRhs() == gathered)
        continue;
      if (gemms.size() == kMaxGemms ||
          (!gemms.empty() &&
           (!sameRingKind(gemm, gemms.front()) ||
            gemm.getLhsScale() != gemms.front().getLhsScale())))
        continue;
      Operation *latest = at;
      for (Value v : {gemm.getLhsScale(), gemm.getRhs(), gemm.getRhsScale()})
        if (Operation *def = v.getDefiningOp();
            def && def->getBlock() == latest->getBlock() &&
            latest->isBeforeInBlock(def))
          latest = def;
      if (latest != at && !readersAfter(gathered, gemms, gemm, latest)) {
        declined = true;
        continue;
      }
      gemms.push_back(gemm);
      at = latest;
    }
    if (gemms.empty()) {
      if (llvm::any_of(gathered.getUsers(), llvm::IsaPred<ScaledMatmulOp>))
        start.emitRemark()
            << "async TP: not fused: no titan.scaled_matmul (linear or "
               "grad_input, one lhs scale) reads the gathered float8 value "
               "with its weight and scales computed before anything reads "
               "the gathered value";
      return;
    }
    if (declined)
      start.emitRemark() << "async TP: some scaled GEMMs' weights or scales "
                            "are computed after the gathered value is read; "
                            "they read the gathered value";
    OpBuilder b(at->getContext());
    b.setInsertionPointAfter(at);
    SmallVector<Value> rhs;
    SmallVector<Type> types{gathered.getType()};
    for (ScaledMatmulOp gemm : gemms) {
      rhs.push_back(gemm.getRhs());
      rhs.push_back(gemm.getRhsScale());
      types.push_back(gemm.getType());
    }
    ScaledMatmulOp first = gemms.front();
    auto fused = AllGatherScaledMatmulOp::create(
        b, first.getLoc(), types, start.getInput(), first.getLhsScale(), rhs,
        start.getAxesAttr(), start.getDimAttr(),
        first.getForm() == GemmForm::GradInput ? b.getUnitAttr() : UnitAttr(),
        first.getRhsTransposed() ? b.getUnitAttr() : UnitAttr());
    for (auto [i, gemm] : llvm::enumerate(gemms)) {
      gemm.getResult().replaceAllUsesWith(fused.getOutputs()[i]);
      gemm->erase();
    }
    gathered.replaceAllUsesWith(fused.getGathered());
    wait.erase();
    start.erase();
  }

  /// reduce_scatter(sum of scaled GEMMs) as one collective matmul; false
  /// when the sum is not of scaled GEMMs (the caller's remark).
  static bool fuseScaledScatter(ReduceScatterStartOp start, WaitOp wait) {
    SmallVector<ScaledMatmulOp> gemms;
    SmallVector<Operation *> adds;
    auto scaled = [&](Operation *op) -> std::optional<ScaledMatmulOp> {
      ScaledMatmulOp gemm = asRingScaledGemm(op, /*rowScales=*/true);
      if (!gemm || (!gemms.empty() && !sameRingKind(gemm, gemms.front())))
        return std::nullopt;
      return gemm;
    };
    if (!collectSum(start.getInput(), gemms, adds, scaled))
      return false;
    if (gemms.size() > kMaxGemms) {
      start.emitRemark() << "async TP: not fused with the scaled GEMMs "
                            "before it: it sums more than 16";
      return true;
    }
    OpBuilder b(start);
    SmallVector<Value> quads;
    for (ScaledMatmulOp gemm : gemms)
      quads.append({gemm.getLhs(), gemm.getLhsScale(), gemm.getRhs(),
                    gemm.getRhsScale()});
    ScaledMatmulOp first = gemms.front();
    auto fused = ScaledMatmulReduceScatterOp::create(
        b, first.getLoc(), wait.getResult().getType(), quads,
        start.getAxesAttr(), start.getDimAttr(),
        first.getForm() == GemmForm::GradInput ? b.getUnitAttr() : UnitAttr(),
        first.getRhsTransposed() ? b.getUnitAttr() : UnitAttr());
    wait.getResult().replaceAllUsesWith(fused.getResult());
    wait.erase();
    start.erase();
    for (Operation *add : adds)
      add->erase();
    for (ScaledMatmulOp gemm : gemms)
      gemm->erase();
    return true;
  }

  /// The GEMMs whose sum `v` is (titan.add trees used once), in order:
  /// each leaf's `asLeaf(op)`, which is null (or nullopt) where `op` is not
  /// a GEMM the sum may take.
  template <typename Leaf, typename AsLeaf>
  static bool collectSum(Value v, SmallVectorImpl<Leaf> &gemms,
                         SmallVectorImpl<Operation *> &adds, AsLeaf &&asLeaf) {
    Operation *def = v.getDefiningOp();
    if (!def || !v.hasOneUse())
      return false;
    if (auto add = dyn_cast<AddOp>(def)) {
      adds.push_back(add);
      return collectSum(add.getLhs(), gemms, adds, asLeaf) &&
             collectSum(add.getRhs(), gemms, adds, asLeaf);
    }
    auto leaf = asLeaf(def);
    if (!leaf)
      return false;
    gemms.push_back(*leaf);
    return true;
  }

  void fuseScatter(ReduceScatterStartOp start) {
    WaitOp wait = waitOf(start);
    if (!wait || !isTensorParallel(start.getAxes()))
      return;
    Operation *def = start.getInput().getDefiningOp();
    if (!def || !(isa<AddOp>(def) || isGemmLike(def)))
      return;
    auto in = cast<RankedTensorType>(start.getInput().getType());
    int64_t dim = start.getDim();
    int64_t group = getGroupSize(getMesh(start), start.getAxes());
    auto remark = [&](StringRef why) {
      start.emitRemark() << "async TP: not fused with the GEMMs before it: "
                         << why;
    };
    if (dim >= in.getRank() - 1 || in.getDimSize(dim) % group != 0)
      return remark("it scatters the GEMMs' last dimension or uneven shards");
    if (fuseScaledScatter(start, wait))
      return;
    SmallVector<Gemm> gemms;
    SmallVector<Operation *> adds;
    if (!collectSum(start.getInput(), gemms, adds, asGemm))
      return remark(
          "its input is not titan.linear, titan.linear_grad_input "
          "or tensorwise titan.scaled_matmul GEMMs of one kind (summed by "
          "titan.add) used only here");
    if (gemms.size() > kMaxGemms)
      return remark("it sums more than 16 GEMMs");
    if (llvm::any_of(gemms, [&](const Gemm &g) {
          return g.gradInput != gemms.front().gradInput;
        }))
      return remark("it sums GEMMs of different kinds");
    OpBuilder b(start);
    SmallVector<Value> pairs;
    for (const Gemm &gemm : gemms) {
      pairs.push_back(gemm.lhs);
      pairs.push_back(gemm.weight);
    }
    auto fused = LinearReduceScatterOp::create(
        b, gemms.front().op->getLoc(), wait.getResult().getType(), pairs,
        start.getAxesAttr(), start.getDimAttr(),
        gemms.front().gradInput ? b.getUnitAttr() : UnitAttr());
    wait.getResult().replaceAllUsesWith(fused.getResult());
    wait.erase();
    start.erase();
    // Users first: the adds (outermost first), then the GEMMs.
    for (Operation *add : adds)
      add->erase();
    for (const Gemm &gemm : gemms)
      gemm.op->erase();
  }
};

} // namespace
