//===- IndexMapsTest.cpp - bounds of kernel.generic's input maps ----------===//
//
// indexExprRange is what lets a generated kernel load through a map without
// a bounds check: the intervals must contain every value the map takes
// (checked here against the map evaluated at every index), and the
// expressions it cannot bound must be refused.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Kernel/IR/IndexMaps.h"

#include "mlir/IR/AffineMap.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using titan::kernel::indexExprRange;

namespace {

class IndexMaps : public ::testing::Test {
protected:
  AffineExpr d0() { return getAffineDimExpr(0, &context); }

  /// The smallest and largest values of `e` over [0, last], evaluated.
  std::pair<int64_t, int64_t> evaluated(AffineExpr e, int64_t last) {
    AffineMap map = AffineMap::get(1, 0, e);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t i = 0; i <= last; ++i) {
      int64_t v = map.compose(ArrayRef<int64_t>{i}).front();
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    return {lo, hi};
  }

  MLIRContext context;
};

// RoPE's maps over a 2 x 3 x 2 x 4 tensor (48 indices) and its 3 x 2 x 2
// table: the bounds are those the maps reach, so the verifier accepts them.
TEST_F(IndexMaps, RopeMapsAreBoundedExactly) {
  AffineExpr i = d0();
  AffineExpr partner = i.floorDiv(2) * 2 + 1 - i % 2;
  AffineExpr cosine = i.floorDiv(8) % 3 * 4 + (i % 4).floorDiv(2) * 2;
  for (AffineExpr e : {partner, cosine, cosine + 1}) {
    auto range = indexExprRange(e, 47);
    ASSERT_TRUE(range.has_value());
    EXPECT_EQ(*range, evaluated(e, 47));
  }
}

// Intervals forget that d0 and d0 mod 2 move together: the same partner
// written as d0 + 1 - 2 (d0 mod 2) is bounded by [-1, 48], wider than it
// reaches ([0, 47]), which is why the generator writes the other form.
TEST_F(IndexMaps, CorrelatedTermsWiden) {
  AffineExpr e = d0() + 1 - (d0() % 2) * 2;
  auto range = indexExprRange(e, 47);
  ASSERT_TRUE(range.has_value());
  EXPECT_EQ(range->first, -1);
  EXPECT_EQ(range->second, 48);
  EXPECT_EQ(evaluated(e, 47), std::make_pair(int64_t(0), int64_t(47)));
}

// A range within one period of a mod keeps its values; ceildiv rounds up.
TEST_F(IndexMaps, ModAndDivisions) {
  EXPECT_EQ(indexExprRange(d0() % 16, 5),
            std::make_pair(int64_t(0), int64_t(5)));
  EXPECT_EQ(indexExprRange(d0() % 4, 5),
            std::make_pair(int64_t(0), int64_t(3)));
  EXPECT_EQ(indexExprRange((d0() + 8) % 16, 5),
            std::make_pair(int64_t(8), int64_t(13)));
  EXPECT_EQ(indexExprRange(d0().ceilDiv(4), 9),
            std::make_pair(int64_t(0), int64_t(3)));
  EXPECT_EQ(indexExprRange(d0() * -3 + 30, 10),
            std::make_pair(int64_t(0), int64_t(30)));
}

// The verifier's and the generator's question: every index inside.
TEST_F(IndexMaps, MapStaysInside) {
  AffineExpr i = d0();
  AffineMap partner = AffineMap::get(1, 0, i.floorDiv(2) * 2 + 1 - i % 2);
  EXPECT_TRUE(titan::kernel::mapStaysInside(partner, 48, 48));
  EXPECT_FALSE(titan::kernel::mapStaysInside(partner, 48, 47));
  EXPECT_FALSE(
      titan::kernel::mapStaysInside(AffineMap::get(1, 0, i + 1), 48, 48));
  EXPECT_FALSE(titan::kernel::mapStaysInside(
      AffineMap::get(2, 0, i + getAffineDimExpr(1, &context)), 4, 100));
}

// What a target could not compute unsigned, or at all, is refused.
TEST_F(IndexMaps, Refused) {
  EXPECT_FALSE(indexExprRange((d0() - 1) % 4, 7).has_value());
  EXPECT_FALSE(indexExprRange((d0() - 1).floorDiv(2), 7).has_value());
  EXPECT_FALSE(indexExprRange(d0() + getAffineSymbolExpr(0, &context), 7));
  EXPECT_FALSE(indexExprRange(getAffineDimExpr(1, &context), 7).has_value());
  EXPECT_FALSE(indexExprRange(d0() * (int64_t(1) << 62), 7).has_value());
}

} // namespace
