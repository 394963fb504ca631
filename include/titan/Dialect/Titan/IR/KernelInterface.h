//===- KernelInterface.h - an op's kernel contract --------------*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_H
#define TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"
#include "titan/Dialect/Titan/IR/KernelTarget.h"
#include "titan/Contract/KernelCatalog.h"

#include <optional>

namespace titan::OpTrait {
template <typename ConcreteType>
class BufferView : public mlir::OpTrait::TraitBase<ConcreteType, BufferView> {};
} // namespace titan::OpTrait

#include "titan/Dialect/Titan/IR/KernelInterface.h.inc"

namespace titan {
/// The scratch bytes `op`'s kernel needs on `target`: the target's rule
/// (its WorkspaceOpInterface model), or 0 where it attaches none.
int64_t getWorkspaceBytes(mlir::Operation *op, KernelTarget target);

/// Whether `target`'s workspace models are registered in `context`
/// (titan::registerCPUTargetExternalModels and its CUDA equivalent);
/// without them every workspace would silently be planned as 0 bytes.
bool hasWorkspaceModels(mlir::MLIRContext *context, KernelTarget target);
} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_H
