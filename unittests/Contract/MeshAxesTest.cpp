//===- MeshAxesTest.cpp - the one table of mesh axes ----------------------===//
//
// The table is TorchTitan's device mesh: its order, its spellings (which
// #dist.mesh, the manifest and the flight recorder print) and the role of
// each axis, which the passes and the runtime read instead of names.
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/MeshAxes.h"

#include <gtest/gtest.h>

#include <string>

using namespace titan::mesh;

namespace {

TEST(MeshAxesTest, TorchTitansOrderAndSpelling) {
  const char *expected[] = {"pp", "dp_replicate", "dp_shard", "cp", "tp"};
  ASSERT_EQ(std::size(kAxes), size_t(kNumAxes));
  for (int a = 0; a < kNumAxes; ++a) {
    EXPECT_EQ(kAxes[a].axis, Axis(a));
    EXPECT_EQ(std::string(axisName(Axis(a))), expected[a]);
  }
}

TEST(MeshAxesTest, NamesParseBack) {
  for (const AxisInfo &info : kAxes)
    EXPECT_EQ(parseAxis(info.name), info.axis);
  EXPECT_EQ(parseAxis("sp"), std::nullopt);
  EXPECT_EQ(parseAxis(""), std::nullopt);
  EXPECT_EQ(parseAxis("cp "), std::nullopt);
}

TEST(MeshAxesTest, RolesOfTheAxes) {
  auto mask = [](bool AxisInfo::*role) {
    return axesWhere([&](const AxisInfo &a) { return a.*role; });
  };
  EXPECT_EQ(mask(&AxisInfo::pipeline), axisBit(kPP));
  EXPECT_EQ(mask(&AxisInfo::batch), axisBit(kDPReplicate) | axisBit(kDPShard));
  EXPECT_EQ(mask(&AxisInfo::storage),
            axisBit(kDPReplicate) | axisBit(kDPShard) | axisBit(kCP));
  EXPECT_EQ(mask(&AxisInfo::sequence), axisBit(kCP));
  EXPECT_EQ(mask(&AxisInfo::loadBalanced), axisBit(kCP));
  EXPECT_EQ(mask(&AxisInfo::tensor), axisBit(kTP));
}

TEST(MeshAxesTest, MasksCoverTheWorld) {
  unsigned all = 0;
  for (const AxisInfo &info : kAxes) {
    EXPECT_EQ(all & axisBit(info.axis), 0u);
    all |= axisBit(info.axis);
  }
  EXPECT_EQ(all, kAllAxes);
  EXPECT_EQ(axesWhere([](const AxisInfo &) { return true; }), kAllAxes);
}

// The table is usable at compile time (a constexpr parse).
static_assert(parseAxis("cp") == kCP);
static_assert(axisInfo(kCP).sequence && !axisInfo(kTP).sequence);

} // namespace
