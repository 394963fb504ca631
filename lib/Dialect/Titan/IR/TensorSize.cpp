//===- TensorSize.cpp - overflow-checked tensor sizes ---------------------===//

#include "titan/Dialect/Titan/IR/TensorSize.h"

#include "mlir/IR/BuiltinTypes.h"

using namespace mlir;

std::optional<int64_t> titan::getStaticByteSize(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape())
    return std::nullopt;
  int64_t bytes = (shaped.getElementTypeBitWidth() + 7) / 8;
  for (int64_t d : shaped.getShape())
    if (__builtin_mul_overflow(bytes, d, &bytes))
      return std::nullopt;
  return bytes;
}

LogicalResult titan::verifyTensorSizes(Operation *op) {
  // Look into composite types too (a dist.future holds a tensor).
  for (Type t :
       llvm::concat<const Type>(op->getOperandTypes(), op->getResultTypes())) {
    WalkResult walk = t.walk([&](ShapedType shaped) {
      if (!shaped.hasStaticShape() || !shaped.getElementType().isIntOrFloat() ||
          getStaticByteSize(shaped))
        return WalkResult::advance();
      op->emitOpError() << "has a tensor of type " << shaped
                        << " whose size in bytes overflows a 64-bit integer";
      return WalkResult::interrupt();
    });
    if (walk.wasInterrupted())
      return failure();
  }
  return success();
}
