//===- SendRingsTest.cpp - how many sends a pipeline rank keeps -----------===//
//
// titan::sendRings on small lists traced by hand (1F1B and GPipe on two
// ranks), and on every schedule titan builds on 2 to 8 ranks: each rank
// keeps at least one slot per channel it sends on and at most the sends
// of its list, and the forward-only list sends only activations.
//
//===----------------------------------------------------------------------===//

#include "titan/Pipeline/SendRings.h"

#include "titan/Model/PipelineStages.h"

#include "gtest/gtest.h"

using namespace titan;

namespace {

PipelineSchedule build(llvm::StringRef schedule, int64_t layers, int64_t ranks,
                       int64_t microbatches) {
  llvm::Expected<PipelinePlan> plan =
      planPipelineStages(layers, ranks, schedule, std::nullopt, 1, 1);
  EXPECT_TRUE(bool(plan)) << llvm::toString(plan.takeError());
  llvm::Expected<PipelineSchedule> s =
      buildSchedule(schedule, *plan, microbatches);
  EXPECT_TRUE(bool(s)) << llvm::toString(s.takeError());
  return *s;
}

std::vector<std::vector<SendRing>> rings(const PipelineSchedule &s) {
  llvm::Expected<std::vector<std::vector<SendRing>>> r =
      sendRings(lowerSchedule(s), s);
  EXPECT_TRUE(bool(r)) << llvm::toString(r.takeError());
  return r ? *r : std::vector<std::vector<SendRing>>{};
}

TEST(SendRings, OneForwardOneBackwardOnTwoRanks) {
  // Rank 0: F0 SEND_F0 F1 SEND_F1 RECV_B0 B0 F2 SEND_F2 ... It learns that
  // rank 1 received F0 from B0's gradient, which rank 1 sent after
  // receiving F0: two activations are in flight at most. Rank 1 learns
  // that rank 0 received B0 from F2, sent after rank 0's RECV_B0: two
  // gradients.
  std::vector<std::vector<SendRing>> r = rings(build("1F1B", 2, 2, 4));
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], (std::vector<SendRing>{{1, 0, 2}}));
  EXPECT_EQ(r[1], (std::vector<SendRing>{{0, 1, 2}}));
  // GPipe: every forward before any backward: rank 0 sends all four
  // activations before it learns anything.
  r = rings(build("GPipe", 2, 2, 4));
  EXPECT_EQ(r[0], (std::vector<SendRing>{{1, 0, 4}}));
}

TEST(SendRings, BoundedByTheListOnEverySchedule) {
  for (llvm::StringRef name :
       {"GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS",
        "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"}) {
    for (int64_t pp : {2, 4, 8}) {
      PipelineSchedule s = build(name, 4 * pp, pp, 2 * pp);
      std::vector<std::vector<std::string>> rows = lowerSchedule(s);
      std::vector<std::vector<SendRing>> r = rings(s);
      ASSERT_EQ(r.size(), size_t(pp));
      for (int64_t rank = 0; rank < pp; ++rank) {
        int64_t sends = 0;
        for (const std::string &text : rows[size_t(rank)])
          if (std::optional<PipelineTransfer> t = parsePipelineTransfer(text))
            sends += t->send;
        int64_t slots = 0;
        for (const SendRing &ring : r[size_t(rank)]) {
          EXPECT_GE(ring.slots, 1);
          EXPECT_NE(ring.peer, rank);
          slots += ring.slots;
        }
        EXPECT_LE(slots, sends) << name.str() << " pp " << pp;
        EXPECT_EQ(slots == 0, sends == 0) << name.str() << " pp " << pp;
      }
      // The forward-only list keeps fewer (no backward waits on them).
      PipelineSchedule eval = forwardOnlySchedule(s);
      for (const std::vector<SendRing> &list : rings(eval))
        for (const SendRing &ring : list)
          EXPECT_EQ(ring.direction, 0);
    }
  }
}

TEST(SendRings, NamesAListThatCannotRun) {
  PipelineSchedule s = build("1F1B", 2, 2, 1);
  std::vector<std::vector<std::string>> rows = {{"0F0"}, {"1RECV_F0", "1F0"}};
  llvm::Expected<std::vector<std::vector<SendRing>>> r = sendRings(rows, s);
  ASSERT_FALSE(bool(r));
  EXPECT_EQ(llvm::toString(r.takeError()),
            "pipeline rank 1 waits forever at '1RECV_F0' (its peer never "
            "sends it)");
}

} // namespace
