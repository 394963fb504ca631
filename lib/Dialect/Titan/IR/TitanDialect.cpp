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
  StringRef key = attr.getName().getValue();
  if (key == kParamAttrName || key == kGradAttrName || key == kExpAvgAttrName ||
      key == kExpAvgSqAttrName) {
    if (!name || name.getValue().empty())
      return emitArgError()
             << "must be a non-empty string naming the parameter";
    return success();
  }
  if (key == kInputAttrName) {
    if (!name || !llvm::is_contained(kInputNames, name.getValue()))
      return emitArgError() << "must be one of \"tokens\", \"labels\", "
                               "\"step\", \"total_steps\"";
    return success();
  }
  return emitArgError() << "is not a known titan argument attribute";
}

LogicalResult TitanDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned regionIndex,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  StringRef key = attr.getName().getValue();
  auto emitResultError = [&]() {
    return op->emitError() << "result #" << resultIndex << " attribute '" << key
                           << "' ";
  };
  if (key == kParamAttrName || key == kGradAttrName || key == kExpAvgAttrName ||
      key == kExpAvgSqAttrName) {
    if (!name || name.getValue().empty())
      return emitResultError()
             << "must be a non-empty string naming the parameter";
    return success();
  }
  if (key == kOutputAttrName) {
    if (!name || !llvm::is_contained(kOutputNames, name.getValue()))
      return emitResultError()
             << "must be one of \"loss\", \"grad_norm\", \"lr\"";
    return success();
  }
  return emitResultError() << "is not a known titan result attribute";
}
