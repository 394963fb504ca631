//===- TitanDialect.cpp - titan dialect -----------------------------------===//

#include "titan/Dialect/Titan/IR/TitanDialect.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace titan;

#include "titan/Dialect/Titan/IR/TitanOpsDialect.cpp.inc"

#include "titan/Dialect/Titan/IR/TitanOpsEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "titan/Dialect/Titan/IR/TitanOpsAttributes.cpp.inc"

void TitanDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "titan/Dialect/Titan/IR/TitanOpsAttributes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "titan/Dialect/Titan/IR/TitanOps.cpp.inc"
      >();
}

/// The titan attributes of a step's arguments and results: the four that
/// name a parameter's state, and `namesKey` (titan.input on arguments,
/// titan.output on results) whose value is one of `names`.
static LogicalResult verifyStateAttribute(Operation *op, StringRef what,
                                          unsigned index, NamedAttribute attr,
                                          StringRef namesKey,
                                          ArrayRef<StringLiteral> names) {
  auto name = dyn_cast<StringAttr>(attr.getValue());
  StringRef key = attr.getName().getValue();
  auto emitAttrError = [&]() {
    return op->emitError() << what << " #" << index << " attribute '" << key
                           << "' ";
  };
  if (key == TitanDialect::kParamAttrName ||
      key == TitanDialect::kGradAttrName ||
      key == TitanDialect::kExpAvgAttrName ||
      key == TitanDialect::kExpAvgSqAttrName) {
    if (!name || name.getValue().empty())
      return emitAttrError()
             << "must be a non-empty string naming the parameter";
    return success();
  }
  if (key == namesKey) {
    if (!name || !llvm::is_contained(names, name.getValue())) {
      InFlightDiagnostic diag = emitAttrError() << "must be one of ";
      llvm::interleaveComma(
          names, diag, [&](StringLiteral n) { diag << "\"" << n << "\""; });
      return diag;
    }
    return success();
  }
  return emitAttrError() << "is not a known titan " << what << " attribute";
}

LogicalResult TitanDialect::verifyRegionArgAttribute(Operation *op,
                                                     unsigned regionIndex,
                                                     unsigned argIndex,
                                                     NamedAttribute attr) {
  return verifyStateAttribute(op, "argument", argIndex, attr, kInputAttrName,
                              kInputNames);
}

LogicalResult TitanDialect::verifyRegionResultAttribute(Operation *op,
                                                        unsigned regionIndex,
                                                        unsigned resultIndex,
                                                        NamedAttribute attr) {
  return verifyStateAttribute(op, "result", resultIndex, attr, kOutputAttrName,
                              kOutputNames);
}

/// The recompute-region attributes titan-activation-checkpoint and
/// titan-autodiff put on ops.
LogicalResult TitanDialect::verifyOperationAttribute(Operation *op,
                                                     NamedAttribute attr) {
  StringRef key = attr.getName().getValue();
  if (key == kRecomputeRegionAttrName) {
    auto region = dyn_cast<IntegerAttr>(attr.getValue());
    if (!region || region.getInt() < 0)
      return op->emitOpError()
             << "attribute '" << key
             << "' must be a non-negative integer (the transformer block)";
    return success();
  }
  if (key == kSaveAttrName || key == kRecomputedAttrName) {
    if (!isa<UnitAttr>(attr.getValue()))
      return op->emitOpError() << "attribute '" << key << "' must be a unit";
    if (key == kSaveAttrName && !op->hasAttr(kRecomputeRegionAttrName))
      return op->emitOpError()
             << "attribute '" << key << "' needs '" << kRecomputeRegionAttrName
             << "' (only a region's ops are "
             << "saved or recomputed)";
    return success();
  }
  return op->emitOpError() << "attribute '" << key
                           << "' is not a known titan op attribute";
}
