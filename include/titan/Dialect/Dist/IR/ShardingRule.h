//===- ShardingRule.h - factor-based op sharding rules ----------*- C++ -*-===//
//
// An op's sharding rule in Shardy's factor form (OpenXLA Shardy's
// OpShardingRule): each dimension of each operand and result is a product
// of factors, outermost first. A factor that appears in operands and
// results carries its sharding through the op; a factor that appears only
// in operands is contracted, so splitting it leaves each rank one term of a
// reduction (a partial result); a factor may also be one the op cannot
// split, or one it splits only over axes its `localize` handles.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_DIST_IR_SHARDINGRULE_H
#define TITAN_DIALECT_DIST_IR_SHARDINGRULE_H

#include "titan/Dialect/Dist/IR/Dist.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace titan::dist {

/// What splitting a factor does to the op.
enum class FactorKind {
  /// Operands and results share it: their slices line up rank by rank.
  PassThrough,
  /// Contracted: each rank computes one term of a reduction, so the results
  /// without it are partial over the factor's axes (a result that has it,
  /// a per-row statistic beside a mean, is split along it).
  Reduction,
  /// Split only over the axes the op's `localize` handles (`allowedAxes`).
  Local,
  /// Never split: operands are gathered whole along it.
  NeedReplication,
};

struct ShardingFactor {
  int64_t size;
  FactorKind kind;
  /// Reduction: how the partial results combine.
  ReductionKind reduction = ReductionKind::Sum;
  /// Local: the mask of the axes it may be split over (bit i: MeshAxes.h's
  /// axis i).
  unsigned allowedAxes = 0;
};

/// Per factor, the mesh axes that split it (outermost first).
using FactorShardings = llvm::SmallVector<llvm::SmallVector<llvm::StringRef>>;

class ShardingRule {
public:
  /// Per dimension, its factors outermost first (none for a size-1 dim).
  using TensorFactors = llvm::SmallVector<llvm::SmallVector<int64_t, 2>>;

  int64_t addFactor(int64_t size, FactorKind kind = FactorKind::PassThrough,
                    ReductionKind reduction = ReductionKind::Sum);
  /// A factor split only over the axes of `axisMask` (FactorKind::Local).
  int64_t addLocalFactor(int64_t size, unsigned axisMask);
  /// The next operand or result; one factor per dimension, or several
  /// (`addOperandDims`).
  void addOperand(llvm::ArrayRef<int64_t> factorPerDim);
  void addResult(llvm::ArrayRef<int64_t> factorPerDim);
  void addOperandDims(TensorFactors dims) { operands.push_back(dims); }
  void addResultDims(TensorFactors dims) { results.push_back(dims); }
  /// The op is linear in its operands (a view): their pending reductions
  /// pass to the results instead of being completed first.
  void setKeepsPartial() { keepsPartial = true; }

  llvm::ArrayRef<ShardingFactor> getFactors() const { return factors; }
  const TensorFactors &getOperand(unsigned i) const { return operands[i]; }
  const TensorFactors &getResult(unsigned i) const { return results[i]; }
  unsigned getNumOperands() const { return operands.size(); }
  unsigned getNumResults() const { return results.size(); }

  /// Chooses the axes of every factor from the operands' shardings:
  /// operands are read in `order` (the first claim of a factor or an axis
  /// wins); a dimension's axes (or their longest prefix that can) go to its
  /// outermost factor; a sharding that does not fit the rule is left for
  /// resharding.
  FactorShardings chooseFactorShardings(llvm::ArrayRef<ShardingAttr> operands,
                                        llvm::ArrayRef<unsigned> order,
                                        MeshAttr mesh) const;
  /// The sharding operand `i` (now sharded as `current`) must have for
  /// `factors`; its pending reduction stays only if the op keeps partial
  /// sums.
  ShardingAttr getOperandSharding(unsigned i, const FactorShardings &factors,
                                  ShardingAttr current) const;
  /// The sharding result `i` gets: its factors' axes, and the split
  /// reduction factors' (or kept) pending reductions.
  ShardingAttr getResultSharding(mlir::MLIRContext *ctx, unsigned i,
                                 const FactorShardings &factors,
                                 llvm::ArrayRef<ShardingAttr> operands) const;

private:
  /// Whether `axes` may split factor `f`: not yet split, allowed by its
  /// kind, dividing it, and no axis already splitting another factor of a
  /// tensor that has `f`.
  bool canClaim(int64_t f, llvm::ArrayRef<llvm::StringRef> axes,
                const FactorShardings &chosen, MeshAttr mesh) const;
  ShardingAttr tensorSharding(mlir::MLIRContext *ctx, const TensorFactors &dims,
                              const FactorShardings &factors,
                              llvm::ArrayRef<llvm::StringRef> partial,
                              ReductionKind reduction) const;

  llvm::SmallVector<ShardingFactor> factors;
  llvm::SmallVector<TensorFactors> operands, results;
  bool keepsPartial = false;
};

/// Builds a sharding from per-dimension axes (trailing empty ones dropped)
/// and pending-reduction axes.
ShardingAttr
makeSharding(mlir::MLIRContext *ctx,
             llvm::ArrayRef<llvm::SmallVector<llvm::StringRef>> dims,
             llvm::ArrayRef<llvm::StringRef> partial = {},
             ReductionKind reduction = ReductionKind::Sum);
/// The replicated sharding.
ShardingAttr replicatedSharding(mlir::MLIRContext *ctx);
/// Per dimension of a rank-`rank` tensor, the axes splitting it.
llvm::SmallVector<llvm::SmallVector<llvm::StringRef>>
shardingDims(ShardingAttr sharding, int64_t rank);

/// A parameter's sharding as the computation uses it: without the storage
/// axes (FSDP's), over which it is gathered first.
ShardingAttr withoutStorageAxes(ShardingAttr stored, int64_t rank);
/// The order in which `op`'s operands claim its rule's factors: parameters
/// first (a plan splits weights; activations follow them), then the rest in
/// operand order.
llvm::SmallVector<unsigned>
claimOrder(mlir::Operation *op,
           llvm::function_ref<bool(mlir::Value)> isParameter);

/// What an op's `localize` may ask of `dist-partition`.
class ShardingLocalizer {
public:
  virtual ~ShardingLocalizer() = default;
  /// The builder, at the op (already given its per-rank operands).
  virtual mlir::OpBuilder &getBuilder() = 0;
  /// The axes splitting factor `factor` of the op's rule.
  virtual llvm::ArrayRef<llvm::StringRef> getFactorAxes(int64_t factor) = 0;
  /// This rank's index over `axes` times `stride` (a dist.shard_offset at
  /// the function's start, shared by its users).
  virtual mlir::Value shardOffset(mlir::Location loc,
                                  llvm::ArrayRef<llvm::StringRef> axes,
                                  int64_t stride) = 0;
  /// How context parallel's attention exchanges K and V.
  virtual RotateMethod getRotateMethod() const = 0;
  /// Replaces the op by `values` (of an op that computes the same per-rank
  /// results), which take over its results' shardings.
  virtual void replaceOp(mlir::Operation *op, mlir::ValueRange values) = 0;
};

/// Attaches the titan ops' sharding rules.
void registerShardingRuleModels(mlir::DialectRegistry &registry);

} // namespace titan::dist

#include "titan/Dialect/Dist/IR/ShardingRuleInterface.h.inc"

#endif // TITAN_DIALECT_DIST_IR_SHARDINGRULE_H
