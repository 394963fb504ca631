//===- ContextParallelLayoutTest.cpp - which chunks a rank holds ----------===//
//
// TorchTitan's load-balanced split (rank r holds chunks r and 2n-1-r of
// 2n) and the contiguous one (chunk r of n): the chunks and positions each
// rank holds, and that the ranks together hold every position once.
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/ContextParallelLayout.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

using titan::mesh::SplitLayout;

namespace {

/// The global positions of rank `rank`'s local part of a dimension of
/// `size`.
std::vector<int64_t> positions(SplitLayout split, int64_t rank, int64_t size) {
  int64_t chunk = size / split.numChunks();
  std::vector<int64_t> out;
  for (int64_t t = 0; t < chunk * split.chunksPerRank(); ++t)
    out.push_back(split.globalPosition(rank, t, chunk));
  return out;
}

TEST(ContextParallelLayoutTest, LoadBalancedChunks) {
  SplitLayout split{4, /*loadBalanced=*/true};
  EXPECT_EQ(split.chunksPerRank(), 2);
  EXPECT_EQ(split.numChunks(), 8);
  for (int64_t rank = 0; rank < 4; ++rank) {
    EXPECT_EQ(split.globalChunk(rank, 0), rank);
    EXPECT_EQ(split.globalChunk(rank, 1), 7 - rank);
  }
  // 16 positions: 8 chunks of 2.
  EXPECT_EQ(positions(split, 0, 16), (std::vector<int64_t>{0, 1, 14, 15}));
  EXPECT_EQ(positions(split, 3, 16), (std::vector<int64_t>{6, 7, 8, 9}));
}

TEST(ContextParallelLayoutTest, ContiguousChunks) {
  SplitLayout split{4, /*loadBalanced=*/false};
  EXPECT_EQ(split.chunksPerRank(), 1);
  EXPECT_EQ(split.numChunks(), 4);
  for (int64_t rank = 0; rank < 4; ++rank)
    EXPECT_EQ(split.globalChunk(rank, 0), rank);
  EXPECT_EQ(positions(split, 1, 16), (std::vector<int64_t>{4, 5, 6, 7}));
}

TEST(ContextParallelLayoutTest, DividesIntoWholeChunks) {
  EXPECT_TRUE((SplitLayout{2, true}.divides(8)));
  EXPECT_FALSE((SplitLayout{2, true}.divides(6)));
  EXPECT_TRUE((SplitLayout{2, false}.divides(6)));
  EXPECT_TRUE((SplitLayout{}.divides(7)));
}

TEST(ContextParallelLayoutTest, RanksTogetherHoldEveryPositionOnce) {
  for (bool loadBalanced : {false, true})
    for (int64_t degree : {1, 2, 3, 4, 8})
      for (int64_t chunk : {1, 3, 16}) {
        SplitLayout split{degree, loadBalanced};
        int64_t size = split.numChunks() * chunk;
        std::vector<int64_t> all;
        for (int64_t rank = 0; rank < degree; ++rank) {
          std::vector<int64_t> own = positions(split, rank, size);
          EXPECT_EQ(int64_t(own.size()), size / degree);
          all.insert(all.end(), own.begin(), own.end());
        }
        std::sort(all.begin(), all.end());
        std::vector<int64_t> expected(size_t(size), 0);
        std::iota(expected.begin(), expected.end(), 0);
        EXPECT_EQ(all, expected) << "degree " << degree << ", chunk " << chunk
                                 << (loadBalanced ? ", load-balanced" : "");
      }
}

} // namespace
