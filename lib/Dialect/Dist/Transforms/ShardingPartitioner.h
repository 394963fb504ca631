//===- ShardingPartitioner.h - per-rank ops from shardings ------*- C++ -*-===//

#ifndef TITAN_LIB_DIALECT_DIST_TRANSFORMS_SHARDINGPARTITIONER_H
#define TITAN_LIB_DIALECT_DIST_TRANSFORMS_SHARDINGPARTITIONER_H

#include "titan/Dialect/Dist/IR/ShardingRule.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

namespace titan::dist {

/// Rewrites the ops of a function to the per-rank program: every value
/// takes the per-rank type of its sharding, and reshards are inserted where
/// an op's rule needs an operand otherwise than it is.
class ShardingPartitioner : public ShardingLocalizer {
public:
  /// Reads every op's rule from the global types: construct it before the
  /// arguments take their per-rank types.
  ShardingPartitioner(mlir::func::FuncOp func, MeshAttr mesh,
                      RotateMethod rotate);

  /// `v`, of its per-rank type, is sharded as `sharding`; a parameter's
  /// operands claim rule factors first.
  void setSharding(mlir::Value v, ShardingAttr sharding, bool parameter);
  ShardingAttr getSharding(mlir::Value v) const;

  /// Rewrites every op of the function's body but the terminator.
  mlir::LogicalResult run();

  /// `v` resharded to `target`, built at the builder's insertion point
  /// (errors are reported on `user`).
  mlir::FailureOr<mlir::Value> reshard(mlir::Value v, ShardingAttr target,
                                       mlir::Operation *user);

  // ShardingLocalizer.
  mlir::OpBuilder &getBuilder() override { return b; }
  llvm::ArrayRef<llvm::StringRef> getFactorAxes(int64_t factor) override {
    return factors[factor];
  }
  mlir::Value shardOffset(mlir::Location loc,
                          llvm::ArrayRef<llvm::StringRef> axes,
                          int64_t stride) override;
  RotateMethod getRotateMethod() const override { return rotate; }
  void replaceOp(mlir::Operation *op, mlir::ValueRange values) override;

private:
  mlir::LogicalResult partitionOp(mlir::Operation *op);
  mlir::LogicalResult partitionWithRule(mlir::Operation *op,
                                        ShardingRuleOpInterface rule);
  /// Gives `v` (of its global type) sharding `s` and its per-rank type.
  mlir::LogicalResult localizeType(mlir::Value v, ShardingAttr s,
                                   mlir::Operation *op);
  /// Records the results' shardings on `op` (dist.shardings).
  void annotate(mlir::Operation *op);
  mlir::Value gather(mlir::Value v, llvm::ArrayRef<llvm::StringRef> axes,
                     int64_t dim);

  mlir::func::FuncOp func;
  MeshAttr mesh;
  RotateMethod rotate;
  mlir::OpBuilder b;
  llvm::DenseMap<mlir::Value, ShardingAttr> shardings;
  llvm::DenseSet<mlir::Value> parameters;
  llvm::DenseMap<std::pair<mlir::Value, mlir::Attribute>, mlir::Value> reshards;
  llvm::DenseMap<mlir::Attribute, mlir::Value> offsets;
  llvm::DenseMap<mlir::Operation *, ShardingRule> rules;
  /// The factor shardings of the op being partitioned.
  FactorShardings factors;
};

} // namespace titan::dist

#endif // TITAN_LIB_DIALECT_DIST_TRANSFORMS_SHARDINGPARTITIONER_H
