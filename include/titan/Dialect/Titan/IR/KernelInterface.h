//===- KernelInterface.h - an op's kernel contract --------------*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_H
#define TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"
#include "titan/Contract/KernelCatalog.h"

#include <optional>

namespace titan::OpTrait {
template <typename ConcreteType>
class BufferView : public mlir::OpTrait::TraitBase<ConcreteType, BufferView> {};
template <typename ConcreteType>
class WidenableResult
    : public mlir::OpTrait::TraitBase<ConcreteType, WidenableResult> {};
} // namespace titan::OpTrait

#include "titan/Dialect/Titan/IR/KernelInterface.h.inc"

namespace titan {
/// The scratch bytes `op`'s kernel needs on the target named `target`: its
/// WorkspaceOpInterface's answer, or 0 for an op without the interface.
int64_t getWorkspaceBytes(mlir::Operation *op, llvm::StringRef target);
} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_H
