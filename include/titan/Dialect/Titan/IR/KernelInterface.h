//===- KernelInterface.h - an op's kernel contract --------------*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_H
#define TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/OpDefinition.h"
#include "titan/Dialect/Titan/IR/KernelTarget.h"
#include "titan/Kernel/KernelCatalog.h"

#include <optional>

namespace titan::OpTrait {
template <typename ConcreteType>
class BufferView : public mlir::OpTrait::TraitBase<ConcreteType, BufferView> {};
} // namespace titan::OpTrait

#include "titan/Dialect/Titan/IR/KernelInterface.h.inc"

#endif // TITAN_DIALECT_TITAN_IR_KERNELINTERFACE_H
