//===- ScheduleTest.cpp - pipeline schedules: lists, checks, bubbles ------===//
//
// The action lists of small cases written out, the simulated bubble of
// each schedule against the textbook formula (Narayanan et al. 2021: GPipe
// and 1F1B (p - 1) / (m + p - 1), interleaved (p - 1) / (v m + p - 1) when
// a chunk costs 1 / v of a stage), and the checker's errors.
//
//===----------------------------------------------------------------------===//

#include "titan/Pipeline/Schedule.h"

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

std::string list(const std::vector<PipelineAction> &actions) {
  std::string text;
  for (const PipelineAction &a : actions)
    text += (text.empty() ? "" : " ") + a.str();
  return text;
}

TEST(PipelineSchedule, OneForwardOneBackwardOnTwoRanks) {
  // Rank 0 warms up with p - r - 1 = 1 forward; rank 1 alternates at once.
  PipelineSchedule s = build("1F1B", 6, 2, 3);
  EXPECT_EQ(list(s.actions[0]), "0F0 0F1 0B0 0F2 0B1 0B2");
  EXPECT_EQ(list(s.actions[1]), "1F0 1B0 1F1 1B1 1F2 1B2");
  PipelineSchedule g = build("GPipe", 6, 2, 3);
  EXPECT_EQ(list(g.actions[0]), "0F0 0F1 0F2 0B0 0B1 0B2");
}

TEST(PipelineSchedule, InterleavedGroupsMicrobatchesByThePipelineDegree) {
  // p = 2, v = 2 (stages 0, 2 on rank 0; 1, 3 on rank 1), m = 4: forwards
  // go mb 0-1 through chunk 0, then through chunk 1, then mb 2-3; rank 0
  // warms up with 2 (p - 1) + (v - 1) p = 4 forwards.
  PipelineSchedule s = build("Interleaved1F1B", 6, 2, 4);
  EXPECT_EQ(list(s.actions[0]),
            "0F0 0F1 2F0 2F1 0F2 2B0 0F3 2B1 2F2 0B0 2F3 0B1 2B2 2B3 0B2 0B3");
  EXPECT_EQ(list(s.actions[1]),
            "1F0 1F1 3F0 3B0 3F1 3B1 1F2 1B0 1F3 1B1 3F2 3B2 3F3 3B3 1B2 1B3");
  llvm::Expected<PipelinePlan> plan =
      planPipelineStages(6, 2, "Interleaved1F1B", std::nullopt, 1, 1);
  llvm::Expected<PipelineSchedule> odd =
      buildSchedule("Interleaved1F1B", *plan, 3);
  ASSERT_FALSE(bool(odd));
  EXPECT_NE(llvm::toString(odd.takeError())
                .find("must be a multiple of "
                      "parallelism.pipeline_parallel_degree (2)"),
            std::string::npos);
}

TEST(PipelineSchedule, BubblesMatchTheTextbook) {
  for (int64_t p : {2, 4})
    for (int64_t m : {4, 8, 16}) {
      SCOPED_TRACE("p " + std::to_string(p) + " m " + std::to_string(m));
      for (llvm::StringRef name : {"GPipe", "1F1B"}) {
        llvm::Expected<ScheduleTimeline> t =
            simulateSchedule(build(name, 4 * p, p, m));
        ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
        EXPECT_NEAR(t->bubble, textbookBubble(name, p, 1, m), 1e-12)
            << name.str();
      }
      // Two chunks per rank, each half a stage's cost.
      llvm::Expected<ScheduleTimeline> t =
          simulateSchedule(build("Interleaved1F1B", 4 * p, p, m), 0.5, 1.0);
      ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
      EXPECT_NEAR(t->bubble, textbookBubble("Interleaved1F1B", p, 2, m), 1e-12);
      // LoopedBFS: correct, and no better than GPipe.
      llvm::Expected<ScheduleTimeline> bfs =
          simulateSchedule(build("LoopedBFS", 4 * p, p, m), 0.5, 1.0);
      ASSERT_TRUE(bool(bfs)) << llvm::toString(bfs.takeError());
      EXPECT_LE(bfs->bubble, textbookBubble("GPipe", p, 1, m) + 1e-12);
    }
}

TEST(PipelineSchedule, CheckerNamesWhatCannotRun) {
  PipelineSchedule s = build("1F1B", 6, 2, 2);
  // A backward before the forward it needs: nothing can ever start it.
  PipelineSchedule stuck = s;
  std::swap(stuck.actions[1][0], stuck.actions[1][1]);
  llvm::Expected<ScheduleTimeline> t = simulateSchedule(stuck);
  ASSERT_FALSE(bool(t));
  EXPECT_NE(llvm::toString(t.takeError()).find("deadlocks"), std::string::npos);
  PipelineSchedule twice = s;
  twice.actions[0][1] = twice.actions[0][0];
  t = simulateSchedule(twice);
  ASSERT_FALSE(bool(t));
  EXPECT_NE(llvm::toString(t.takeError()).find("runs 0F0 twice"),
            std::string::npos);
  PipelineSchedule foreign = s;
  foreign.actions[0][0].stage = 1;
  t = simulateSchedule(foreign);
  ASSERT_FALSE(bool(t));
  EXPECT_NE(llvm::toString(t.takeError()).find("not an action of one of its"),
            std::string::npos);
  PipelineSchedule missing = s;
  missing.actions[0].pop_back();
  t = simulateSchedule(missing);
  ASSERT_FALSE(bool(t));
  EXPECT_NE(llvm::toString(t.takeError()).find("runs 7 of the 8"),
            std::string::npos);
}

} // namespace
