//===- TitanDialect.cpp - titan dialect -----------------------------------===//

#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace titan;

#include "titan/Dialect/Titan/IR/TitanOpsDialect.cpp.inc"

void TitanDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "titan/Dialect/Titan/IR/TitanOps.cpp.inc"
      >();
}

LogicalResult TitanDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  auto emitArgError = [&]() {
    return op->emitError() << "argument #" << argIndex << " attribute '"
                           << attr.getName().getValue() << "' ";
  };
  auto name = dyn_cast<StringAttr>(attr.getValue());
  if (attr.getName() == kParamAttrName) {
    if (!name || name.getValue().empty())
      return emitArgError()
             << "must be a non-empty string naming the parameter";
    return success();
  }
  if (attr.getName() == kInputAttrName) {
    if (!name || (name.getValue() != "tokens" && name.getValue() != "labels"))
      return emitArgError() << "must be \"tokens\" or \"labels\"";
    return success();
  }
  return emitArgError() << "is not a known titan argument attribute";
}
