//===- Dist.h - dist dialect ------------------------------------*- C++ -*-===//

#ifndef TITAN_DIALECT_DIST_IR_DIST_H
#define TITAN_DIALECT_DIST_IR_DIST_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "titan/Contract/ContextParallelLayout.h"
#include "titan/Contract/MeshAxes.h"
#include "titan/Dialect/Titan/IR/AdjointInterface.h"
#include "titan/Dialect/Titan/IR/KernelInterface.h"
#include "titan/Dialect/Titan/IR/TensorSize.h"

#include "titan/Dialect/Dist/IR/DistOpsDialect.h.inc"

namespace titan::dist {
/// The side-effect resource of in-flight collectives (see DistOps.td).
struct CollectiveResource
    : public mlir::SideEffects::Resource::Base<CollectiveResource> {
  llvm::StringRef getName() final { return "dist.collective"; }
};

/// Verifies that the future of `op` (its only result) is waited exactly once,
/// in the op's block.
mlir::LogicalResult verifyFutureWaitedOnce(mlir::Operation *op);

namespace OpTrait {
template <typename ConcreteType>
class FutureWaitedOnce
    : public mlir::OpTrait::TraitBase<ConcreteType, FutureWaitedOnce> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyFutureWaitedOnce(op);
  }
};
} // namespace OpTrait
} // namespace titan::dist

#include "titan/Dialect/Dist/IR/DistOpsEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "titan/Dialect/Dist/IR/DistOpsAttributes.h.inc"

#define GET_TYPEDEF_CLASSES
#include "titan/Dialect/Dist/IR/DistOpsTypes.h.inc"

#define GET_OP_CLASSES
#include "titan/Dialect/Dist/IR/DistOps.h.inc"

namespace titan::dist {
/// The #dist.mesh of the module enclosing `op`, or null.
MeshAttr getMesh(mlir::Operation *op);
/// Whether parameters split over `axis` are only stored split (FSDP over
/// dp_shard, and over cp as TorchTitan's dp_shard_cp mesh does) and are
/// gathered whole before the computation uses them.
bool isStorageAxis(llvm::StringRef axis);
/// Product of the sizes of `axes` on `mesh`.
int64_t getGroupSize(MeshAttr mesh, mlir::ArrayAttr axes);

/// The ranked tensor type of `v` (every value the dist rules handle).
inline mlir::RankedTensorType tensorTypeOf(mlir::Value v) {
  return mlir::cast<mlir::RankedTensorType>(v.getType());
}

/// A collective's start and its wait: the value it yields.
template <typename StartOp, typename... Args>
mlir::Value createCollective(mlir::OpBuilder &b, mlir::Location loc,
                             mlir::RankedTensorType resultType,
                             Args &&...args) {
  auto start =
      StartOp::create(b, loc, FutureType::get(b.getContext(), resultType),
                      std::forward<Args>(args)...);
  return WaitOp::create(b, loc, start);
}
} // namespace titan::dist

#endif // TITAN_DIALECT_DIST_IR_DIST_H
