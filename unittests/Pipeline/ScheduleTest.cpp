//===- ScheduleTest.cpp - pipeline schedules: lists, checks, bubbles ------===//
//
// The action lists of small cases written out, the simulated bubble of
// each schedule against the textbook formula (Narayanan et al. 2021: GPipe
// and 1F1B (p - 1) / (m + p - 1), interleaved (p - 1) / (v m + p - 1) when
// a chunk costs 1 / v of a stage; ZB-H1, Qi et al. 2024), the zero-bubble
// lists against torch.distributed.pipelining's (schedules.py; the ZBV one
// traced by hand through its algorithm), TorchTitan's CSV format, and the
// checker's errors.
//
//===----------------------------------------------------------------------===//

#include "titan/Pipeline/Schedule.h"

#include "Pipeline/TestSchedules.h"

#include "gtest/gtest.h"

using namespace titan;

namespace {

constexpr auto build = test::buildPlanned;

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
        EXPECT_NEAR(t->bubble, *textbookBubble(name, p, 1, m), 1e-12)
            << name.str();
      }
      // Two chunks per rank, each half a stage's cost.
      llvm::Expected<ScheduleTimeline> t =
          simulateSchedule(build("Interleaved1F1B", 4 * p, p, m), 0.5, 1.0);
      ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
      EXPECT_NEAR(t->bubble, *textbookBubble("Interleaved1F1B", p, 2, m),
                  1e-12);
      // LoopedBFS: correct, and no better than GPipe.
      llvm::Expected<ScheduleTimeline> bfs =
          simulateSchedule(build("LoopedBFS", 4 * p, p, m), 0.5, 1.0);
      ASSERT_TRUE(bool(bfs)) << llvm::toString(bfs.takeError());
      EXPECT_LE(bfs->bubble, *textbookBubble("GPipe", p, 1, m) + 1e-12);
    }
}

TEST(PipelineSchedule, SimulatesPerStageCostsAndTransfers) {
  // GPipe, p = 2, m = 2; stage 0: F 1, B 2; stage 1: F 3, B 4; a transfer
  // between the ranks takes 0.5. By hand: 0F0 [0, 1], 0F1 [1, 2]; 1F0
  // waits for 0F0's output: [1.5, 4.5], 1F1 [4.5, 7.5], 1B0 [7.5, 11.5],
  // 1B1 [11.5, 15.5]; 0B0 waits for 1B0's gradient: [12, 14], 0B1 [16,
  // 18]. Busy 6 + 14 of 2 x 18: bubble 1 - 20 / 36.
  PipelineSchedule s = build("GPipe", 4, 2, 2);
  ScheduleCosts costs;
  costs.perStage = {{1, 2, 1, 1}, {3, 4, 2, 2}};
  costs.transferSeconds = 0.5;
  llvm::Expected<ScheduleTimeline> t = simulateSchedule(s, costs);
  ASSERT_TRUE(bool(t)) << llvm::toString(t.takeError());
  EXPECT_DOUBLE_EQ(t->makespan, 18);
  EXPECT_DOUBLE_EQ(t->bubble, 1 - 20.0 / 36);
  EXPECT_EQ(t->start[1], (std::vector<double>{1.5, 4.5, 7.5, 11.5}));
  EXPECT_EQ(t->start[0], (std::vector<double>{0, 1, 12, 16}));
  // The unit-cost API is the uniform costs without transfers.
  llvm::Expected<ScheduleTimeline> unit = simulateSchedule(s, 1, 2);
  llvm::Expected<ScheduleTimeline> uniform =
      simulateSchedule(s, ScheduleCosts::uniform(2, 1, 2));
  ASSERT_TRUE(unit && uniform);
  EXPECT_DOUBLE_EQ(unit->makespan, uniform->makespan);
  EXPECT_DOUBLE_EQ(unit->bubble, uniform->bubble);
  // Costs must cover every stage.
  costs.perStage.pop_back();
  llvm::Expected<ScheduleTimeline> short_ = simulateSchedule(s, costs);
  ASSERT_FALSE(bool(short_));
  EXPECT_EQ(llvm::toString(short_.takeError()),
            "the schedule has 2 stages but costs for 1");
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
  EXPECT_NE(llvm::toString(t.takeError()).find("never runs 0B1"),
            std::string::npos);
  // A microbatch backward both whole and split.
  PipelineSchedule both = s;
  both.actions[0].push_back({PipelineAction::BackwardWeight, 0, 0});
  t = simulateSchedule(both);
  ASSERT_FALSE(bool(t));
  EXPECT_NE(llvm::toString(t.takeError()).find("runs both 0B0"),
            std::string::npos);
}

// The zero-bubble and V schedules, as torch.distributed.pipelining builds
// them (ScheduleInterleavedZeroBubble, ScheduleZBVZeroBubble,
// ScheduleDualPipeV), written out for 2 ranks and 4 microbatches.
TEST(PipelineSchedule, ZeroBubbleListsOnTwoRanks) {
  PipelineSchedule zb = build("InterleavedZeroBubble", 2, 2, 4);
  EXPECT_EQ(list(zb.actions[0]), "0F0 0F1 2F0 2F1 2I0 2W0 0F2 2I1 2W1 0F3 0I0 "
                                 "0W0 2F2 0I1 0W1 2F3 2I2 2W2 2I3 2W3 0I2 0W2 "
                                 "0I3 0W3");
  PipelineSchedule zbv = build("ZBVZeroBubble", 2, 2, 4);
  EXPECT_EQ(list(zbv.actions[1]), "1F0 2F0 1F1 2F1 2I0 2W0 1F2 1I0 1W0 2F2 2I1 "
                                  "2W1 1F3 1I1 1W1 2F3 2I2 2W2 1I2 2I3 1I3 1W2 "
                                  "2W3 1W3");
  PipelineSchedule dual = build("DualPipeV", 2, 2, 4);
  EXPECT_EQ(list(dual.actions[0]),
            "0F0 0F1 0F2 3F0 3I0 3W0 3F1 0F3 3B1 3F2 0B0 "
            "3B2 3F3 0B1 3B3 0I2 0W2 0I3 0W3");
  EXPECT_TRUE(splitsBackward(dual));
  EXPECT_FALSE(splitsBackward(build("1F1B", 2, 2, 4)));
}

TEST(PipelineSchedule, ZeroBubbleSchedulesRunAndBeat1F1B) {
  for (int64_t p : {2, 3, 4})
    for (int64_t m : {2 * p, 4 * p}) {
      SCOPED_TRACE("p " + std::to_string(p) + " m " + std::to_string(m));
      // Two stages per rank, each half a stage's cost (I = W = a quarter).
      llvm::Expected<ScheduleTimeline> zb = simulateSchedule(
          build("InterleavedZeroBubble", 2 * p, p, m), 0.5, 1.0);
      ASSERT_TRUE(bool(zb)) << llvm::toString(zb.takeError());
      EXPECT_NEAR(zb->bubble, *textbookBubble("InterleavedZeroBubble", p, 2, m),
                  1e-12);
      for (llvm::StringRef name : {"ZBVZeroBubble", "DualPipeV"}) {
        llvm::Expected<ScheduleTimeline> t =
            simulateSchedule(build(name, 2 * p, p, m), 0.5, 1.0);
        ASSERT_TRUE(bool(t))
            << name.str() << ": " << llvm::toString(t.takeError());
        EXPECT_LT(t->bubble, *textbookBubble("Interleaved1F1B", p, 2, m))
            << name.str();
      }
    }
  // Fewer microbatches than stages: DualPipeV refuses.
  llvm::Expected<PipelinePlan> plan =
      planPipelineStages(4, 2, "DualPipeV", std::nullopt, 1, 1);
  ASSERT_TRUE(bool(plan));
  llvm::Expected<PipelineSchedule> s = buildSchedule("DualPipeV", *plan, 3);
  ASSERT_FALSE(bool(s));
  EXPECT_NE(llvm::toString(s.takeError())
                .find("at least as many microbatches as stages"),
            std::string::npos);
}

TEST(PipelineSchedule, ParsesTorchTitanCSV) {
  llvm::Expected<PipelinePlan> plan =
      planPipelineStages(2, 2, "1F1B", std::nullopt, 1, 1);
  ASSERT_TRUE(bool(plan));
  // Idle cells and the transfer actions of a lowered schedule are skipped.
  llvm::Expected<PipelineSchedule> s = parseScheduleCSV(
      "0F0, ,0SEND_F0,0F1,0I0,0W0,0B1\n1RECV_F0,1F0,1B0,1F1,1B1\n", *plan, 2);
  ASSERT_TRUE(bool(s)) << llvm::toString(s.takeError());
  EXPECT_EQ(list(s->actions[0]), "0F0 0F1 0I0 0W0 0B1");
  EXPECT_EQ(list(s->actions[1]), "1F0 1B0 1F1 1B1");
  EXPECT_TRUE(bool(simulateSchedule(*s)));
  s = parseScheduleCSV("0F0,0Q0\n1F0\n", *plan, 1);
  ASSERT_FALSE(bool(s));
  EXPECT_NE(llvm::toString(s.takeError()).find("row 1, cell 2: '0Q0'"),
            std::string::npos);
  s = parseScheduleCSV("0F0\n", *plan, 1);
  ASSERT_FALSE(bool(s));
  EXPECT_NE(llvm::toString(s.takeError()).find("has 1 rows"),
            std::string::npos);
}

std::string joined(const std::vector<std::string> &row) {
  std::string text;
  for (const std::string &a : row)
    text += (text.empty() ? "" : " ") + a;
  return text;
}

TEST(PipelineSchedule, ForwardOnlyScheduleForValidation) {
  // Interleaved, p = 2, v = 2, m = 2: each microbatch through the rank's
  // stages in stage order; transfers only where the next stage is remote,
  // and no UNSHARD or REDUCE_GRAD (the eval forwards gather their weights).
  PipelineSchedule eval =
      forwardOnlySchedule(build("Interleaved1F1B", 6, 2, 2));
  EXPECT_TRUE(eval.forwardOnly);
  EXPECT_EQ(list(eval.actions[0]), "0F0 2F0 0F1 2F1");
  EXPECT_EQ(list(eval.actions[1]), "1F0 3F0 1F1 3F1");
  ASSERT_TRUE(bool(simulateSchedule(eval)));
  std::vector<std::vector<std::string>> rows = lowerSchedule(eval);
  EXPECT_EQ(joined(rows[0]), "0F0 0SEND_F0 2RECV_F0 2F0 2SEND_F0 0F1 0SEND_F1 "
                             "2RECV_F1 2F1 2SEND_F1");
  EXPECT_EQ(joined(rows[1]), "1RECV_F0 1F0 1SEND_F0 3RECV_F0 3F0 1RECV_F1 1F1 "
                             "1SEND_F1 3RECV_F1 3F1");
  llvm::Expected<PipelineSchedule> checked = verifyLoweredSchedule(rows, eval);
  EXPECT_TRUE(bool(checked)) << llvm::toString(checked.takeError());

  // The V layout (stages 0 and 3 on rank 0, 1 and 2 on rank 1): the
  // middle stages hand over on their rank, without transfers.
  PipelineSchedule v = forwardOnlySchedule(build("ZBVZeroBubble", 8, 2, 2));
  std::vector<std::vector<std::string>> vRows = lowerSchedule(v);
  EXPECT_EQ(joined(vRows[1]), "1RECV_F0 1F0 2F0 2SEND_F0 1RECV_F1 1F1 2F1 "
                              "2SEND_F1");
  EXPECT_TRUE(bool(verifyLoweredSchedule(vRows, v)));

  // A forward-only schedule runs no backward.
  eval.actions[0].push_back({PipelineAction::Backward, 0, 0});
  llvm::Expected<ScheduleTimeline> bad = simulateSchedule(eval);
  ASSERT_FALSE(bool(bad));
  EXPECT_EQ(llvm::toString(bad.takeError()),
            "the forward-only schedule runs a backward of 0F0");
}

} // namespace
