//===- Kernel.h - the kernel dialect ----------------------------*- C++ -*-===//

#ifndef TITAN_DIALECT_KERNEL_IR_KERNEL_H
#define TITAN_DIALECT_KERNEL_IR_KERNEL_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "llvm/ADT/DenseSet.h"

#include "titan/Contract/KernelCatalog.h"

#include "titan/Dialect/Kernel/IR/KernelOpsDialect.h.inc"

namespace titan::kernel {
/// The side-effect resource of in-flight collectives.
struct CommunicationResource
    : public mlir::SideEffects::Resource::Base<CommunicationResource> {
  llvm::StringRef getName() final { return "kernel.communication"; }
};
} // namespace titan::kernel

#include "titan/Dialect/Kernel/IR/KernelOpsEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "titan/Dialect/Kernel/IR/KernelOpsAttributes.h.inc"

#define GET_TYPEDEF_CLASSES
#include "titan/Dialect/Kernel/IR/KernelOpsTypes.h.inc"

namespace titan::kernel {
/// One part of a horizontally fused kernel.generic: its buffers (ranges of
/// the op's inputs, outputs and reductions) and its element count.
struct GenericSegment {
  unsigned inputBegin, inputEnd;
  unsigned outputBegin, outputEnd;
  unsigned reductionBegin, reductionEnd;
  int64_t elements;
};
} // namespace titan::kernel

#define GET_OP_CLASSES
#include "titan/Dialect/Kernel/IR/KernelOps.h.inc"

namespace titan::kernel {
/// The buffer a value views (a kernel.view is the same memory).
inline mlir::Value viewedBuffer(mlir::Value v) {
  while (auto view = v.getDefiningOp<ViewOp>())
    v = view.getSource();
  return v;
}

/// Where a buffer of type `type` lives (device memory unless its memory
/// space says host).
MemorySpace getMemorySpace(mlir::Type type);
/// `type` in memory space `space`.
mlir::MemRefType inMemorySpace(mlir::MemRefType type, MemorySpace space);

/// Whether `op` reduces a value over its row of a row kernel
/// (kernel.row_sum, kernel.row_max, kernel.row_logsumexp).
inline bool isRowReduction(mlir::Operation *op) {
  return mlir::isa<RowSumOp, RowMaxOp, RowLogSumExpOp>(op);
}

/// The mesh-axis mask of the group `op` communicates over: a collective's,
/// or a kernel call's that exchanges data inside the call (the catalog's
/// kCommunicates, e.g. async TP's collective matmuls); its `axis_mask`
/// parameter. std::nullopt for any other op.
std::optional<unsigned> communicationAxisMask(mlir::Operation *op);
} // namespace titan::kernel

#endif // TITAN_DIALECT_KERNEL_IR_KERNEL_H
