//===- TitanDialect.h - titan dialect ---------------------------*- C++ -*-===//

#ifndef TITAN_DIALECT_TITAN_IR_TITANDIALECT_H
#define TITAN_DIALECT_TITAN_IR_TITANDIALECT_H

#include "mlir/IR/Dialect.h"

#include "titan/Dialect/Titan/IR/TitanOpsDialect.h.inc"

#endif // TITAN_DIALECT_TITAN_IR_TITANDIALECT_H
