//===- TensorSize.h - overflow-checked tensor sizes -------------*- C++ -*-===//
//
// Shapes come from configs (dimensions, batch and sequence sizes), so their
// products may overflow int64. Every titan and dist op verifies its tensors
// through TensorSizesFit; later passes may then multiply freely.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_TITAN_IR_TENSORSIZE_H
#define TITAN_DIALECT_TITAN_IR_TENSORSIZE_H

#include "mlir/IR/OpDefinition.h"

#include <optional>

namespace titan {

/// The number of bytes of a statically shaped tensor or memref (sub-byte
/// element types rounded up to whole bytes), or std::nullopt when it does
/// not fit in int64 or the shape is not static.
std::optional<int64_t> getStaticByteSize(mlir::Type type);

/// Fails (with a diagnostic on `op`) when an operand or result is a shaped
/// type whose byte size overflows int64.
mlir::LogicalResult verifyTensorSizes(mlir::Operation *op);

namespace OpTrait {
template <typename ConcreteType>
class TensorSizesFit
    : public mlir::OpTrait::TraitBase<ConcreteType, TensorSizesFit> {
public:
  static mlir::LogicalResult verifyTrait(mlir::Operation *op) {
    return verifyTensorSizes(op);
  }
};
} // namespace OpTrait

} // namespace titan

#endif // TITAN_DIALECT_TITAN_IR_TENSORSIZE_H
