//===- PeerChannelsTest.cpp - the pipeline's NCCL channels ----------------===//
//
// runtime/lib/PeerChannels.h: every transfer of every schedule titan
// builds, on 2 to 8 pipeline ranks, has its channel (its sender, receiver
// and flow), each channel is made once, and no round of ncclCommSplit puts
// a rank in two channels (a rank has one color per split).
//
//===----------------------------------------------------------------------===//

#include "PeerChannels.h"

#include "Pipeline/TestSchedules.h"

#include "gtest/gtest.h"

#include <set>
#include <tuple>

using namespace titanrt;

namespace {

using Key = std::tuple<int64_t, int64_t, int>;

std::set<Key> channelsOf(int64_t pp) {
  std::set<Key> made;
  for (const std::vector<PeerChannel> &round : peerChannelRounds(pp)) {
    std::set<int64_t> busy;
    for (const PeerChannel &c : round) {
      EXPECT_NE(c.from, c.to);
      EXPECT_TRUE(busy.insert(c.from).second) << "pp " << pp;
      EXPECT_TRUE(busy.insert(c.to).second) << "pp " << pp;
      EXPECT_TRUE(made.insert({c.from, c.to, c.flow}).second) << "pp " << pp;
    }
  }
  return made;
}

TEST(PeerChannels, RoundsMakeEachNeighbourChannelOnce) {
  EXPECT_TRUE(peerChannelRounds(1).empty());
  // Two ranks: each direction of each flow.
  EXPECT_EQ(channelsOf(2).size(), 4u);
  for (int64_t pp : {3, 4, 5, 8}) {
    std::set<Key> made = channelsOf(pp);
    EXPECT_EQ(made.size(), size_t(4 * pp));
    // Even rings pair up perfectly: pp / 2 channels per round.
    if (pp % 2 == 0)
      EXPECT_EQ(peerChannelRounds(pp).size(), 8u);
  }
}

TEST(PeerChannels, EveryScheduleTransfersOnMadeChannels) {
  int64_t checked = 0;
  for (llvm::StringRef name :
       {"GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS",
        "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"}) {
    for (int64_t pp : {2, 3, 4, 8}) {
      // Two stages per rank where the schedule runs several.
      titan::PipelineSchedule s =
          titan::test::buildPlanned(name, 4 * pp, pp, 2 * pp);
      std::vector<int64_t> owner(size_t(s.stages));
      for (auto [rank, stages] : llvm::enumerate(s.stagesOfRank))
        for (int64_t stage : stages)
          owner[size_t(stage)] = int64_t(rank);
      std::set<Key> made = channelsOf(pp);
      for (int64_t stage = 0; stage + 1 < s.stages; ++stage) {
        int64_t from = owner[size_t(stage)], to = owner[size_t(stage + 1)];
        if (from == to)
          continue;
        ++checked;
        EXPECT_TRUE(made.count({from, to, 0}))
            << name.str() << " pp " << pp << ": activations " << from << " -> "
            << to;
        EXPECT_TRUE(made.count({to, from, 1}))
            << name.str() << " pp " << pp << ": gradients " << to << " -> "
            << from;
      }
    }
  }
  // 7 schedules x (1 + 2 + 3 + 7) boundaries without V, fewer with.
  EXPECT_GT(checked, 50);
}

} // namespace
