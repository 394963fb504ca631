//===- IndexMaps.h - where a generated kernel reads its inputs --*- C++ -*-===//
//
// A kernel.generic input's map takes the kernel's (flat) index to the
// element it reads. The verifier proves each map stays inside its buffer
// by interval arithmetic, so the targets can load without a bounds check.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DIALECT_KERNEL_IR_INDEXMAPS_H
#define TITAN_DIALECT_KERNEL_IR_INDEXMAPS_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/IR/AffineMap.h"

#include <cstdint>
#include <optional>
#include <utility>

namespace titan::kernel {

/// The closed interval of values `expr` (of dimension d0 alone) takes for
/// d0 in [0, last], when interval arithmetic bounds it: constants, d0,
/// sums, products by constants, and mod, floordiv and ceildiv by positive
/// constants of operands never negative (so a target computes them as
/// unsigned). Nothing otherwise (a symbol, a negative or zero divisor, a
/// possibly negative dividend, an overflow).
std::optional<std::pair<int64_t, int64_t>> indexExprRange(mlir::AffineExpr expr,
                                                          int64_t last);

/// Whether `map` (one index to one element) provably takes every index in
/// [0, indices) to an element in [0, elements) (indexExprRange's bounds).
bool mapStaysInside(mlir::AffineMap map, int64_t indices, int64_t elements);

} // namespace titan::kernel

#endif // TITAN_DIALECT_KERNEL_IR_INDEXMAPS_H
