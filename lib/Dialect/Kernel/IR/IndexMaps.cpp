//===- IndexMaps.cpp - bounds of a generated kernel's input maps ----------===//

#include "titan/Dialect/Kernel/IR/IndexMaps.h"

#include "llvm/Support/MathExtras.h"

#include <algorithm>

using namespace mlir;

namespace {
using Range = std::pair<int64_t, int64_t>;

std::optional<Range> add(Range a, Range b) {
  int64_t lo, hi;
  if (llvm::AddOverflow(a.first, b.first, lo) ||
      llvm::AddOverflow(a.second, b.second, hi))
    return std::nullopt;
  return Range{lo, hi};
}

/// `a` times the constant `c`.
std::optional<Range> scale(Range a, int64_t c) {
  int64_t x, y;
  if (llvm::MulOverflow(a.first, c, x) || llvm::MulOverflow(a.second, c, y))
    return std::nullopt;
  return Range{std::min(x, y), std::max(x, y)};
}

/// The constant of `expr`, when it is one.
std::optional<int64_t> constantOf(AffineExpr expr) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return c.getValue();
  return std::nullopt;
}
} // namespace

bool titan::kernel::mapStaysInside(AffineMap map, int64_t indices,
                                   int64_t elements) {
  if (map.getNumDims() != 1 || map.getNumSymbols() != 0 ||
      map.getNumResults() != 1)
    return false;
  std::optional<Range> range = indexExprRange(map.getResult(0), indices - 1);
  return range && range->first >= 0 && range->second < elements;
}

std::optional<Range> titan::kernel::indexExprRange(AffineExpr expr,
                                                   int64_t last) {
  if (auto c = dyn_cast<AffineConstantExpr>(expr))
    return Range{c.getValue(), c.getValue()};
  if (auto d = dyn_cast<AffineDimExpr>(expr))
    return d.getPosition() == 0 && last >= 0 ? std::optional(Range{0, last})
                                             : std::nullopt;
  auto binary = dyn_cast<AffineBinaryOpExpr>(expr);
  if (!binary)
    return std::nullopt;
  std::optional<Range> lhs = indexExprRange(binary.getLHS(), last);
  if (!lhs)
    return std::nullopt;
  if (expr.getKind() == AffineExprKind::Add) {
    std::optional<Range> rhs = indexExprRange(binary.getRHS(), last);
    return rhs ? add(*lhs, *rhs) : std::nullopt;
  }
  // Products, mods and divisions are by constants in affine maps of dims
  // alone (MLIR puts a product's constant on the right).
  std::optional<int64_t> c = constantOf(binary.getRHS());
  if (!c)
    return std::nullopt;
  if (expr.getKind() == AffineExprKind::Mul)
    return scale(*lhs, *c);
  if (*c <= 0 || lhs->first < 0)
    return std::nullopt;
  switch (expr.getKind()) {
  case AffineExprKind::Mod:
    // A range shorter than the divisor that does not wrap keeps its values.
    if (lhs->second / *c == lhs->first / *c)
      return Range{lhs->first % *c, lhs->second % *c};
    return Range{0, *c - 1};
  case AffineExprKind::FloorDiv:
    return Range{lhs->first / *c, lhs->second / *c};
  case AffineExprKind::CeilDiv:
    return Range{llvm::divideCeil(lhs->first, *c),
                 llvm::divideCeil(lhs->second, *c)};
  default:
    return std::nullopt;
  }
}
