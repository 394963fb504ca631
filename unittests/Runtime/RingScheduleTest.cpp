//===- RingScheduleTest.cpp - the collective matmuls' ring schedule -------===//
//
// runtime/lib/RingSchedule.h, which the CPU ring (AsyncTensorParallel.cpp)
// and the CUDA entries (runtime/cuda/KernelABI.cpp) both follow, on rings
// of 1 to 8 ranks simulated in one process: shards are chunk ids and
// partial sums the set of ranks added in, moved as Communicator::sendRecv
// with shift +1 moves them (rank r sends to r + 1). Checked:
// - every rank works on every chunk exactly once;
// - all-gather: the chunk held at step s is the one rank (index - s)
//   started with, and is what the buffers actually hold;
// - reduce-scatter: every chunk's partial sums travel with it, and rank
//   r's last step produces chunk r summed over every rank, in its result;
// - double buffering: no step receives into, or writes its sums over, the
//   buffer a shift in flight is sending from.
//
//===----------------------------------------------------------------------===//

#include "RingSchedule.h"

#include "gtest/gtest.h"

#include <array>
#include <cstdint>
#include <set>
#include <vector>

using namespace titanrt::ring;

namespace {

constexpr int64_t kMaxRanks = 8;

TEST(RingSchedule, Wrap) {
  EXPECT_EQ(wrap(-1, 4), 3);
  EXPECT_EQ(wrap(-9, 4), 3);
  EXPECT_EQ(wrap(5, 4), 1);
  EXPECT_EQ(wrap(0, 1), 0);
}

TEST(RingSchedule, AxisOfMaskNamesOneAxis) {
  EXPECT_EQ(axisOfMask(1u << 0), 0);
  EXPECT_EQ(axisOfMask(1u << 3), 3);
  EXPECT_EQ(axisOfMask(1u << 31), 31);
  EXPECT_EQ(axisOfMask(0), -1);
  EXPECT_EQ(axisOfMask(0b101), -1);
  EXPECT_EQ(axisOfMask(0b11000), -1);
}

TEST(RingSchedule, EveryRankVisitsEveryChunkOnce) {
  for (int64_t n = 1; n <= kMaxRanks; ++n)
    for (int64_t r = 0; r < n; ++r) {
      std::set<int64_t> gathered, reduced;
      for (int64_t s = 0; s < n; ++s) {
        gathered.insert(allGatherStep(r, n, s).chunk);
        reduced.insert(reduceScatterStep(r, n, s).chunk);
      }
      EXPECT_EQ(int64_t(gathered.size()), n) << "rank " << r << " of " << n;
      EXPECT_EQ(int64_t(reduced.size()), n) << "rank " << r << " of " << n;
      EXPECT_EQ(*gathered.rbegin(), n - 1);
      EXPECT_EQ(*reduced.rbegin(), n - 1);
    }
}

// Hand-computed: rank 1 of 4.
TEST(RingSchedule, RankOneOfFour) {
  const int64_t gathered[] = {1, 0, 3, 2}, reduced[] = {0, 3, 2, 1};
  const int held[] = {kOutside, 0, 1, 0}, incoming[] = {0, 1, 0, kOutside};
  const int partial[] = {0, 1, 0, kOutside};
  for (int64_t s = 0; s < 4; ++s) {
    AllGatherStep g = allGatherStep(1, 4, s);
    EXPECT_EQ(g.chunk, gathered[s]);
    EXPECT_EQ(g.held, held[s]);
    EXPECT_EQ(g.incoming, incoming[s]);
    ReduceScatterStep rs = reduceScatterStep(1, 4, s);
    EXPECT_EQ(rs.chunk, reduced[s]);
    EXPECT_EQ(rs.partial, partial[s]);
    EXPECT_EQ(rs.addsReceived, s > 0);
    EXPECT_EQ(rs.sends, s < 3);
  }
}

TEST(RingSchedule, RingOfOneIsItsOwnShard) {
  AllGatherStep g = allGatherStep(0, 1, 0);
  EXPECT_EQ(g.chunk, 0);
  EXPECT_EQ(g.held, kOutside);
  EXPECT_EQ(g.incoming, kOutside);
  ReduceScatterStep rs = reduceScatterStep(0, 1, 0);
  EXPECT_EQ(rs.chunk, 0);
  EXPECT_EQ(rs.partial, kOutside);
  EXPECT_FALSE(rs.addsReceived);
  EXPECT_FALSE(rs.sends);
}

// The all-gather's shards moved through each rank's input and two buffers
// as the schedule says.
TEST(RingSchedule, AllGatherMovesTheShardsItNames) {
  for (int64_t n = 1; n <= kMaxRanks; ++n) {
    constexpr int64_t kEmpty = -1;
    std::vector<std::array<int64_t, 2>> buffers(size_t(n), {kEmpty, kEmpty});
    std::vector<std::set<int64_t>> gathered(static_cast<size_t>(n));
    for (int64_t s = 0; s < n; ++s) {
      std::vector<int64_t> sent(size_t(n), kEmpty);
      for (int64_t r = 0; r < n; ++r) {
        AllGatherStep step = allGatherStep(r, n, s);
        int64_t held = step.held == kOutside ? r : buffers[r][step.held];
        EXPECT_EQ(held, step.chunk) << "rank " << r << " step " << s;
        EXPECT_EQ(step.chunk, wrap(r - s, n));
        gathered[r].insert(held);
        EXPECT_EQ(step.incoming != kOutside, s + 1 < n);
        // The buffer received into is not the one being sent from.
        if (step.incoming != kOutside) {
          EXPECT_NE(step.incoming, step.held);
          sent[r] = held;
        }
      }
      // Shift +1: rank r's shard lands in rank r + 1's incoming buffer.
      for (int64_t r = 0; r < n; ++r) {
        if (sent[r] == kEmpty)
          continue;
        int64_t to = wrap(r + 1, n);
        buffers[to][allGatherStep(to, n, s).incoming] = sent[r];
      }
    }
    for (int64_t r = 0; r < n; ++r)
      EXPECT_EQ(int64_t(gathered[r].size()), n);
  }
}

// The reduce-scatter's partial sums (a chunk and the ranks added in) moved
// as the schedule says: each rank's last step holds its own chunk summed
// over every rank, each rank's term added once.
TEST(RingSchedule, ReduceScatterSumsEveryRankIntoItsOwnShard) {
  struct Sums {
    int64_t chunk = -1;
    uint32_t ranks = 0;
  };
  for (int64_t n = 1; n <= kMaxRanks; ++n) {
    std::vector<std::array<Sums, 2>> partials(static_cast<size_t>(n));
    std::vector<Sums> received(static_cast<size_t>(n)),
        result(static_cast<size_t>(n));
    for (int64_t s = 0; s < n; ++s) {
      std::vector<Sums> sent(static_cast<size_t>(n));
      for (int64_t r = 0; r < n; ++r) {
        ReduceScatterStep step = reduceScatterStep(r, n, s);
        // The previous step's sums are still being sent from their buffer
        // while this step's GEMMs run.
        if (s > 0) {
          int inFlight = reduceScatterStep(r, n, s - 1).partial;
          EXPECT_TRUE(step.partial == kOutside || step.partial != inFlight)
              << "rank " << r << " step " << s;
        }
        Sums &target =
            step.partial == kOutside ? result[r] : partials[r][step.partial];
        target = {step.chunk, 1u << r}; // this rank's GEMM term
        if (step.addsReceived) {
          EXPECT_EQ(received[r].chunk, step.chunk)
              << "rank " << r << " step " << s;
          EXPECT_EQ(received[r].ranks & target.ranks, 0u);
          target.ranks |= received[r].ranks;
        }
        EXPECT_EQ(step.sends, s + 1 < n);
        if (step.sends)
          sent[r] = target;
      }
      for (int64_t r = 0; r < n; ++r)
        if (sent[r].chunk >= 0)
          received[wrap(r + 1, n)] = sent[r];
    }
    for (int64_t r = 0; r < n; ++r) {
      EXPECT_EQ(result[r].chunk, r) << "rank " << r << " of " << n;
      EXPECT_EQ(result[r].ranks, (1u << n) - 1) << "rank " << r << " of " << n;
    }
  }
}

} // namespace
