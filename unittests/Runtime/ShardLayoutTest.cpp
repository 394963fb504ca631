//===- ShardLayoutTest.cpp - blocks of sharded tensors and resharding -----===//
//
// The boxes every layout assigns tile each tensor exactly once (uneven FSDP
// shards included), and copying through box intersections moves a tensor
// from any layout to any other unchanged: what checkpoint saves, loads and
// resharding rely on.
//
//===----------------------------------------------------------------------===//

#include "ShardLayout.h"

#include "gtest/gtest.h"

#include <numeric>
#include <tuple>
#include <vector>

using namespace titanrt;

namespace {

Manifest::Param param(std::vector<int64_t> shape,
                      std::vector<std::vector<MeshAxis>> dimAxes) {
  Manifest::Param p;
  p.shape = shape;
  p.dimAxes = dimAxes;
  p.dimAxes.resize(shape.size());
  return p;
}

/// The padded local shape of `p` on `mesh`: ceil-divided by each axis.
std::vector<int64_t> localShape(const Manifest::Param &p,
                                const std::vector<int64_t> &mesh) {
  std::vector<int64_t> local = p.shape;
  for (size_t d = 0; d < local.size(); ++d)
    for (MeshAxis a : p.dimAxes[d])
      local[d] = (local[d] + mesh[a] - 1) / mesh[a];
  return local;
}

TEST(ShardLayout, MeshCoordinatesTpFastest) {
  std::vector<int64_t> mesh = {1, 2, 2, 1, 4};
  EXPECT_EQ(meshCoordinates(mesh, 13), (std::vector<int64_t>{0, 1, 1, 0, 1}));
  EXPECT_EQ(meshCoordinates(mesh, 0), (std::vector<int64_t>{0, 0, 0, 0, 0}));
  EXPECT_EQ(meshCoordinates(mesh, 15), (std::vector<int64_t>{0, 1, 1, 0, 3}));
}

TEST(ShardLayout, UnevenAndNestedSplits) {
  // FSDP 4 over 10 rows: ceil(10 / 4) = 3 rows each, the last holds 1.
  std::vector<int64_t> mesh = {1, 1, 4, 1, 1};
  Manifest::Param p = param({10, 4}, {{kDPShard}});
  std::vector<int64_t> starts, sizes;
  for (int64_t r = 0; r < 4; ++r) {
    Box b = shardBox(p, mesh, meshCoordinates(mesh, r));
    starts.push_back(b.start[0]);
    sizes.push_back(b.size[0]);
    EXPECT_EQ(b.size[1], 4);
  }
  EXPECT_EQ(starts, (std::vector<int64_t>{0, 3, 6, 9}));
  EXPECT_EQ(sizes, (std::vector<int64_t>{3, 3, 3, 1}));

  // 7 rows split by dp_shard 2 then tp 2 (outermost first): [0, 4) and
  // [4, 7), then halves of each: [0, 2) [2, 4) [4, 6) [6, 7).
  mesh = {1, 1, 2, 1, 2};
  p = param({7}, {{kDPShard, kTP}});
  std::vector<std::pair<int64_t, int64_t>> boxes;
  for (int64_t r = 0; r < 4; ++r) {
    Box b = shardBox(p, mesh, meshCoordinates(mesh, r));
    boxes.push_back({b.start[0], b.size[0]});
  }
  EXPECT_EQ(boxes, (std::vector<std::pair<int64_t, int64_t>>{
                       {0, 2}, {2, 2}, {4, 2}, {6, 1}}));

  // More shards than rows: the last rank holds only padding.
  mesh = {1, 1, 3, 1, 1};
  p = param({2, 5}, {{kDPShard}});
  EXPECT_TRUE(shardBox(p, mesh, meshCoordinates(mesh, 2)).empty());
}

/// Every layout below, for a 2-D tensor of awkward sizes.
struct Layout {
  std::vector<int64_t> mesh;
  std::vector<std::vector<MeshAxis>> dimAxes;
};

std::vector<Layout> layouts() {
  return {
      {{1, 1, 1, 1, 1}, {}},                  // one rank
      {{1, 1, 4, 1, 1}, {{kDPShard}}},        // FSDP 4
      {{1, 1, 3, 1, 1}, {{kDPShard}}},        // FSDP 3, uneven
      {{1, 1, 1, 1, 2}, {{}, {kTP}}},         // TP 2, columns
      {{1, 1, 2, 1, 2}, {{kDPShard, kTP}}},   // FSDP 2 x TP 2, rows
      {{1, 1, 2, 1, 2}, {{kDPShard}, {kTP}}}, // FSDP rows x TP columns
      {{1, 2, 2, 1, 1}, {{kDPShard}}},        // HSDP: replicated twice
  };
}

TEST(ShardLayout, WritersTileTheTensorOnce) {
  for (const Layout &l : layouts()) {
    Manifest::Param p = param({11, 7}, l.dimAxes);
    std::vector<int> count(77, 0);
    for (int64_t r = 0; r < numel(l.mesh); ++r) {
      std::vector<int64_t> c = meshCoordinates(l.mesh, r);
      Box b = shardBox(p, l.mesh, c);
      if (b.empty() || !writesShard(p, c))
        continue;
      for (int64_t i = b.start[0]; i < b.start[0] + b.size[0]; ++i)
        for (int64_t j = b.start[1]; j < b.start[1] + b.size[1]; ++j)
          ++count[i * 7 + j];
    }
    for (int c : count)
      ASSERT_EQ(c, 1);
  }
}

TEST(ShardLayout, ReshardingThroughIntersectionsIsExact) {
  std::vector<float> whole(11 * 7);
  std::iota(whole.begin(), whole.end(), 1.0f);
  Storage wholeStorage{{0, 0}, {11, 7}};
  for (const Layout &from : layouts())
    for (const Layout &to : layouts()) {
      Manifest::Param src = param({11, 7}, from.dimAxes);
      Manifest::Param dst = param({11, 7}, to.dimAxes);
      // Saved blocks: each writer's box, packed.
      std::vector<std::pair<Box, std::vector<float>>> saved;
      for (int64_t r = 0; r < numel(from.mesh); ++r) {
        std::vector<int64_t> c = meshCoordinates(from.mesh, r);
        Box b = shardBox(src, from.mesh, c);
        if (b.empty() || !writesShard(src, c))
          continue;
        std::vector<float> block(b.numel());
        forEachRun(wholeStorage, Storage{b.start, b.size}, b,
                   [&](int64_t s, int64_t d, int64_t n) {
                     std::copy_n(whole.data() + s, n, block.data() + d);
                   });
        saved.push_back({b, std::move(block)});
      }
      // Each destination rank fills its padded shard from the blocks.
      std::vector<int64_t> local = localShape(dst, to.mesh);
      for (int64_t r = 0; r < numel(to.mesh); ++r) {
        Box mine = shardBox(dst, to.mesh, meshCoordinates(to.mesh, r));
        std::vector<float> shard(numel(local), 0.0f);
        for (const auto &[box, block] : saved)
          forEachRun(Storage{box.start, box.size}, Storage{mine.start, local},
                     intersect(mine, box),
                     [&](int64_t s, int64_t d, int64_t n) {
                       std::copy_n(block.data() + s, n, shard.data() + d);
                     });
        for (int64_t i = 0; i < local[0]; ++i)
          for (int64_t j = 0; j < local[1]; ++j) {
            int64_t gi = mine.start[0] + i, gj = mine.start[1] + j;
            bool valid = i < mine.size[0] && j < mine.size[1];
            ASSERT_EQ(shard[i * local[1] + j], valid ? whole[gi * 7 + gj] : 0)
                << "rank " << r << " at " << i << ", " << j;
          }
      }
    }
}

TEST(ShardLayout, RunsMergeAcrossWholeRows) {
  Storage whole{{0, 0}, {8, 6}};
  std::vector<std::tuple<int64_t, int64_t, int64_t>> runs;
  auto record = [&](int64_t s, int64_t d, int64_t n) {
    runs.emplace_back(s, d, n);
  };
  // Rows 2..5 whole, into a packed block: one run.
  Box rows{{2, 0}, {4, 6}};
  forEachRun(whole, Storage{rows.start, rows.size}, rows, record);
  EXPECT_EQ(runs,
            (std::vector<std::tuple<int64_t, int64_t, int64_t>>{{12, 0, 24}}));
  // Columns 3..5: one run per row.
  runs.clear();
  Box cols{{0, 3}, {8, 3}};
  forEachRun(whole, Storage{cols.start, cols.size}, cols, record);
  ASSERT_EQ(runs.size(), 8u);
  EXPECT_EQ(runs[1], std::make_tuple(int64_t(9), int64_t(3), int64_t(3)));
  // Whole rows into a padded shard (rows of 6 in rows of 6, but the shard
  // is taller): still one run.
  runs.clear();
  forEachRun(whole, Storage{rows.start, {5, 6}}, rows, record);
  EXPECT_EQ(runs.size(), 1u);
}

TEST(ShardLayout, FindOverlap) {
  // FSDP 4 x TP 2 blocks of an [8, 6] tensor: a tiling.
  std::vector<Box> grid;
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t c = 0; c < 2; ++c)
      grid.push_back({{2 * r, 3 * c}, {2, 3}});
  EXPECT_FALSE(findOverlap(grid));
  // The same block twice, and a block straddling two others.
  std::vector<Box> twice = grid;
  twice.push_back(grid[5]);
  EXPECT_EQ(findOverlap(twice),
            std::make_optional(std::pair<size_t, size_t>(5, 8)));
  std::vector<Box> straddle = {
      {{0, 0}, {4, 6}}, {{4, 0}, {4, 6}}, {{3, 2}, {2, 1}}};
  EXPECT_EQ(findOverlap(straddle),
            std::make_optional(std::pair<size_t, size_t>(0, 2)));
  // Touching edges do not overlap; 1-D and uneven.
  EXPECT_FALSE(findOverlap({{{0}, {22}}, {{22}, {22}}, {{44}, {20}}}));
  EXPECT_TRUE(findOverlap({{{0}, {23}}, {{22}, {22}}}));
}

} // namespace
