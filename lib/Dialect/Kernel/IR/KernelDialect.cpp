//===- KernelDialect.cpp - the kernel dialect -----------------------------===//

#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Titan/IR/TensorSize.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace titan;
using namespace titan::kernel;

#include "titan/Dialect/Kernel/IR/KernelOpsDialect.cpp.inc"

#include "titan/Dialect/Kernel/IR/KernelOpsEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "titan/Dialect/Kernel/IR/KernelOpsAttributes.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "titan/Dialect/Kernel/IR/KernelOpsTypes.cpp.inc"

void KernelDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "titan/Dialect/Kernel/IR/KernelOpsAttributes.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "titan/Dialect/Kernel/IR/KernelOpsTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "titan/Dialect/Kernel/IR/KernelOps.cpp.inc"
      >();
}

LogicalResult KernelDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                      unsigned,
                                                      NamedAttribute attr) {
  if (attr.getName() == kSlotAttrName && !isa<StringAttr>(attr.getValue()))
    return op->emitError() << "'" << kSlotAttrName << "' must be a string";
  return success();
}

LogicalResult KernelDialect::verifyOperationAttribute(Operation *op,
                                                      NamedAttribute attr) {
  if (attr.getName() == kArenaBytesAttrName) {
    auto bytes = dyn_cast<IntegerAttr>(attr.getValue());
    if (!bytes || bytes.getInt() < 0 || bytes.getInt() % kAlignment != 0)
      return op->emitError()
             << "'" << kArenaBytesAttrName
             << "' must be a non-negative multiple of " << kAlignment;
    return success();
  }
  if (attr.getName() == kSlotsAttrName ||
      attr.getName() == kFrameSlotsAttrName) {
    auto slots = dyn_cast<DictionaryAttr>(attr.getValue());
    if (!slots)
      return op->emitError()
             << "'" << attr.getName().getValue() << "' must be a dictionary";
    for (NamedAttribute slot : slots) {
      auto range = dyn_cast<DenseI64ArrayAttr>(slot.getValue());
      if (!range || range.size() != 2 || range[0] < 0 || range[1] < 0 ||
          range[0] % kAlignment != 0)
        return op->emitError()
               << "slot '" << slot.getName().getValue()
               << "' must be array<i64: offset, bytes> with an offset "
                  "aligned to "
               << kAlignment;
    }
    return success();
  }
  if (attr.getName() == kSeparateRoundingAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitError() << "'" << kSeparateRoundingAttrName
                             << "' must be a unit attribute";
    return success();
  }
  return op->emitError() << "unknown kernel attribute '"
                         << attr.getName().getValue() << "'";
}

/// Memrefs of the kernel IR are contiguous (identity layout) and have a
/// byte size that fits in int64.
static LogicalResult verifyBuffer(Operation *op, Type type, StringRef what) {
  auto memref = cast<MemRefType>(type);
  if (!memref.getLayout().isIdentity())
    return op->emitOpError()
           << what << " must have the identity layout, got " << type;
  if (!getStaticByteSize(memref))
    return op->emitOpError() << what << " of type " << type
                             << " has a size in bytes that overflows int64";
  return success();
}

LogicalResult AllocOp::verify() {
  if (std::optional<int64_t> offset = getOffset();
      offset && (*offset < 0 || *offset % KernelDialect::kAlignment != 0))
    return emitOpError() << "offset " << *offset
                         << " must be a non-negative multiple of "
                         << KernelDialect::kAlignment;
  return verifyBuffer(*this, getType(), "buffer");
}

LogicalResult ViewOp::verify() {
  if (failed(verifyBuffer(*this, getSource().getType(), "source")) ||
      failed(verifyBuffer(*this, getType(), "result")))
    return failure();
  if (getStaticByteSize(getSource().getType()) != getStaticByteSize(getType()))
    return emitOpError() << "views " << getSource().getType() << " as "
                         << getType() << ", which has another size in bytes";
  return success();
}

/// Kernel parameters are i64 integers and f64 floats.
static LogicalResult verifyParams(Operation *op, ArrayAttr params) {
  for (auto [i, p] : llvm::enumerate(params)) {
    auto integer = dyn_cast<IntegerAttr>(p);
    auto real = dyn_cast<FloatAttr>(p);
    if (!(integer && integer.getType().isInteger(64)) &&
        !(real && real.getType().isF64()))
      return op->emitOpError() << "parameter #" << i
                               << " must be an i64 or f64 attribute, got " << p;
  }
  return success();
}

LogicalResult CallOp::verify() {
  if (getOutputs().empty())
    return emitOpError() << "must write at least one output";
  for (Value v : llvm::concat<Value>(getInputs(), getOutputs()))
    if (failed(verifyBuffer(*this, v.getType(), "buffer")))
      return failure();
  return verifyParams(*this, getParams());
}

LogicalResult CopyOp::verify() {
  if (getSource().getType() != getTarget().getType())
    return emitOpError() << "copies " << getSource().getType() << " into "
                         << getTarget().getType()
                         << "; the types must be equal";
  return success();
}

LogicalResult CollectiveStartOp::verify() {
  Value request = getRequest();
  if (!request.hasOneUse() || !isa<WaitOp>(*request.getUsers().begin()) ||
      request.getUsers().begin()->getBlock() != (*this)->getBlock())
    return emitOpError() << "request must be waited exactly once, by a "
                            "kernel.wait in the same block";
  return verifyParams(*this, getParams());
}

#define GET_OP_CLASSES
#include "titan/Dialect/Kernel/IR/KernelOps.cpp.inc"
