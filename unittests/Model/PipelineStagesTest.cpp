//===- PipelineStagesTest.cpp - TorchTitan's pipeline stage split ---------===//
//
// The expected splits are what TorchTitan v0.2.0's own
// generate_llm_fqn_per_model_part returns (torchtitan/distributed/
// pipeline_parallel.py at the tag, the function run alone on these
// arguments), and the stage indices those of pipeline_module_split's
// _get_stage_indices ("loop": r + s p; "v": r and 2p - 1 - r).
//
//===----------------------------------------------------------------------===//

#include "titan/Model/PipelineStages.h"

#include "gtest/gtest.h"

using namespace titan;

namespace {

/// (embedding, layers, output) per stage.
struct Expect {
  bool embedding;
  int64_t layers;
  bool output;
};

PipelinePlan plan(int64_t layers, int64_t ranks, llvm::StringRef schedule,
                  std::optional<int64_t> perStage = std::nullopt,
                  int64_t first = 1, int64_t last = 1) {
  llvm::Expected<PipelinePlan> p =
      planPipelineStages(layers, ranks, schedule, perStage, first, last);
  EXPECT_TRUE(bool(p)) << llvm::toString(p.takeError());
  return p ? *p : PipelinePlan();
}

void expectStages(const PipelinePlan &p, std::vector<Expect> want) {
  ASSERT_EQ(p.stages.size(), want.size());
  int64_t next = 0;
  for (size_t s = 0; s < want.size(); ++s) {
    SCOPED_TRACE("stage " + std::to_string(s));
    EXPECT_EQ(p.stages[s].embedding, want[s].embedding);
    EXPECT_EQ(p.stages[s].numLayers, want[s].layers);
    EXPECT_EQ(p.stages[s].output, want[s].output);
    EXPECT_EQ(p.stages[s].firstLayer, next); // contiguous, in order
    next += p.stages[s].numLayers;
  }
}

std::string error(int64_t layers, int64_t ranks, llvm::StringRef schedule,
                  std::optional<int64_t> perStage, int64_t first = 1,
                  int64_t last = 1) {
  llvm::Expected<PipelinePlan> p =
      planPipelineStages(layers, ranks, schedule, perStage, first, last);
  return p ? "" : llvm::toString(p.takeError());
}

TEST(PipelineStages, Llama8BOnFourRanks) {
  // generate_llm_fqn_per_model_part(4, 32, 1, 1): 34 effective layers,
  // 8 each and 2 extra on the first stages.
  PipelinePlan p = plan(32, 4, "1F1B");
  expectStages(p, {{true, 8, false},
                   {false, 9, false},
                   {false, 8, false},
                   {false, 7, true}});
  EXPECT_EQ(p.stages[3].moduleNames().back(), "output");
  EXPECT_EQ(p.stages[0].moduleNames().front(), "tok_embeddings");
  EXPECT_EQ(p.stages[1].moduleNames().front(), "layers.8");
  EXPECT_EQ(p.stagesOfRank,
            (std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {3}}));
}

TEST(PipelineStages, UnevenSplits) {
  // (4, 6, 1, 1), (3, 7, 1, 1), (5, 14, 1, 1) and (8, 16, 2, 1).
  expectStages(plan(6, 4, "GPipe"), {{true, 1, false},
                                     {false, 2, false},
                                     {false, 2, false},
                                     {false, 1, true}});
  expectStages(plan(7, 3, "1F1B"),
               {{true, 2, false}, {false, 3, false}, {false, 2, true}});
  expectStages(plan(14, 5, "1F1B"), {{true, 3, false},
                                     {false, 3, false},
                                     {false, 3, false},
                                     {false, 3, false},
                                     {false, 2, true}});
  expectStages(plan(16, 4, "Interleaved1F1B", std::nullopt, 2, 1),
               {{true, 1, false},
                {false, 3, false},
                {false, 3, false},
                {false, 2, false},
                {false, 2, false},
                {false, 2, false},
                {false, 2, false},
                {false, 1, true}});
}

TEST(PipelineStages, StagesOfEachRank) {
  // Looped: 2 stages per rank by default, rank r holds r and r + p.
  PipelinePlan looped = plan(6, 2, "Interleaved1F1B");
  EXPECT_EQ(looped.style, ScheduleStyle::Looped);
  EXPECT_EQ(looped.stagesOfRank,
            (std::vector<std::vector<int64_t>>{{0, 2}, {1, 3}}));
  // pipeline_parallel_layers_per_stage 2: 8 layers + embedding + output =
  // 10 effective layers, ceil(10 / 2) = 5 stages, one on each of 5 ranks.
  PipelinePlan perStage = plan(8, 5, "1F1B", 2);
  EXPECT_EQ(perStage.stages.size(), 5u);
  // V: rank r holds r and 2p - 1 - r.
  PipelinePlan v = plan(6, 2, "ZBVZeroBubble");
  EXPECT_EQ(v.style, ScheduleStyle::V);
  EXPECT_EQ(v.stagesOfRank,
            (std::vector<std::vector<int64_t>>{{0, 3}, {1, 2}}));
  PipelinePlan dual = plan(30, 4, "DualPipeV");
  EXPECT_EQ(dual.stagesOfRank, (std::vector<std::vector<int64_t>>{
                                   {0, 7}, {1, 6}, {2, 5}, {3, 4}}));
}

TEST(PipelineStages, ImpossibleSplitsNameTheKeys) {
  EXPECT_NE(error(6, 2, "1F1B", 3)
                .find("not divisible by "
                      "parallelism.pipeline_parallel_degree"),
            std::string::npos);
  EXPECT_NE(error(6, 2, "1F1B", 1).find("runs exactly 1 stage per rank"),
            std::string::npos);
  EXPECT_NE(error(6, 4, "Interleaved1F1B", 2).find("at least 2 stages"),
            std::string::npos);
  EXPECT_NE(error(6, 2, "DualPipeV", 1).find("is a V schedule"),
            std::string::npos);
  // TorchTitan: "input_weight (2) exceeds minimum layers per stage (1)".
  EXPECT_NE(error(3, 4, "1F1B", std::nullopt, 2, 1)
                .find("pipeline_parallel_first_stage_less_layers (2) "
                      "exceeds the 1 layers per stage"),
            std::string::npos);
  EXPECT_NE(error(2, 8, "1F1B", std::nullopt).find("outnumber"),
            std::string::npos);
  EXPECT_NE(error(8, 2, "Bogus", std::nullopt).find("is not one of"),
            std::string::npos);
}

} // namespace
