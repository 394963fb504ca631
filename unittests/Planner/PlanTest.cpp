//===- PlanTest.cpp - the planner's enumeration, bounds and search --------===//
//
// The layouts of a small job counted by hand, the overrides that reproduce
// a candidate read back by the config loader, the memory bound's bytes,
// and the search's bookkeeping and dominance with a predictor whose
// answers are known.
//
//===----------------------------------------------------------------------===//

#include "titan/Planner/Plan.h"

#include "gtest/gtest.h"

using namespace titan;
using namespace titan::plan;

namespace {

LlamaArgs debugModel() {
  TrainConfig config;
  llvm::Expected<LlamaArgs> model =
      resolveLlamaModel(config, TITAN_DEFAULT_MODELS_DIR);
  EXPECT_TRUE(bool(model)) << llvm::toString(model.takeError());
  return *model;
}

Request request(int64_t gpus) {
  Request r;
  r.gpus = gpus;
  r.memoryBytes = int64_t(1) << 40;
  r.hardware.name = "test";
  r.hardware.devicesPerNode = 8;
  r.hardware.peakFlopsBF16 = 1e12;
  r.hardware.gemmEfficiency = 0.5;
  return r;
}

TEST(PlanTest, EnumeratesTwoDevicesByHand) {
  TrainConfig config;
  config.training.globalBatchSize = 4;
  Request r = request(2);
  // No FP8 peak: Float8 is not searched. Async TP doubles tp = 2 layouts.
  //   pp 1, tp 1, cp 1, dp 2 (dp_replicate 1 or 2): local 1 or 2, 3 AC
  //     modes: 2 x 2 x 3 = 12
  //   pp 1, tp 1, cp 2, dp 1: local 1, 2 or 4: 3 x 3 = 9
  //   pp 1, tp 2: local 1, 2, 4, async TP off/on: 3 x 3 x 2 = 18
  //   pp 2: local 1, 2, 4 with 1, 2, 3 microbatch sizes, 5 schedules:
  //     6 x 5 x 3 = 90
  std::vector<Candidate> all = enumerate(debugModel(), config, r);
  EXPECT_EQ(all.size(), 12u + 9u + 18u + 90u);
  // With FP8 GEMMs every candidate comes with Float8 off and on.
  r.hardware.peakFlopsFP8 = 2e12;
  EXPECT_EQ(enumerate(debugModel(), config, r).size(), 2 * 129u);
}

TEST(PlanTest, OverridesReproduceTheCandidate) {
  TrainConfig base;
  base.training.globalBatchSize = 64;
  Candidate c;
  c.mesh.pp = 2;
  c.mesh.dpReplicate = 2;
  c.mesh.dpShard = 4;
  c.mesh.tp = 2;
  c.schedule = "Interleaved1F1B";
  c.microbatchSize = 2;
  c.localBatch = 8;
  c.ac = "op";
  c.float8 = true;
  c.asyncTP = true;
  std::string args = overrides(c, 64);
  llvm::SmallVector<llvm::StringRef> words;
  llvm::StringRef(args).split(words, ' ', -1, false);
  std::vector<std::string> storage(words.begin(), words.end());
  std::vector<const char *> argv;
  for (const std::string &w : storage)
    argv.push_back(w.c_str());
  std::vector<ConfigOverride> parsed;
  std::vector<const char *> rest;
  ASSERT_FALSE(bool(extractConfigOverrides(argv, parsed, rest)));
  EXPECT_TRUE(rest.empty());
  llvm::Expected<TrainConfig> loaded = loadTrainConfig(parsed);
  ASSERT_TRUE(bool(loaded)) << llvm::toString(loaded.takeError());
  TrainConfig applied = applyCandidate(base, c);
  const auto &p = loaded->parallelism, &q = applied.parallelism;
  EXPECT_EQ(p.pipelineParallelDegree, q.pipelineParallelDegree);
  EXPECT_EQ(p.dataParallelReplicateDegree, q.dataParallelReplicateDegree);
  EXPECT_EQ(p.dataParallelShardDegree, q.dataParallelShardDegree);
  EXPECT_EQ(p.tensorParallelDegree, q.tensorParallelDegree);
  EXPECT_EQ(p.contextParallelDegree, q.contextParallelDegree);
  EXPECT_EQ(p.pipelineParallelSchedule, q.pipelineParallelSchedule);
  EXPECT_EQ(p.pipelineParallelMicrobatchSize, q.pipelineParallelMicrobatchSize);
  EXPECT_EQ(p.enableAsyncTensorParallel, q.enableAsyncTensorParallel);
  EXPECT_EQ(loaded->training.localBatchSize, 8);
  EXPECT_EQ(loaded->training.globalBatchSize, 64);
  EXPECT_EQ(loaded->activationCheckpoint.mode, "selective");
  EXPECT_EQ(loaded->activationCheckpoint.selectiveAcOption, "op");
  EXPECT_TRUE(loaded->float8.enabled(loaded->model.converters));
  EXPECT_TRUE(applied.float8.enabled(applied.model.converters));
}

TEST(PlanTest, MemoryBoundCountsStateAndBlockInputs) {
  LlamaArgs model = debugModel();
  TrainConfig config;
  config.training.seqLen = 256;
  Candidate c;
  c.mesh.dpShard = 4;
  c.localBatch = 2;
  c.ac = "full";
  int64_t params = 0;
  for (const ParamSpec &p : llamaParameters(model))
    params += p.numel();
  // f32 training: 16 bytes of state per parameter over 4 shards, and 6
  // blocks' inputs of 2 x 256 tokens x 256 in f32.
  int64_t expected = int64_t(double(params) / 4 * 16 + 6.0 * 512 * 256 * 4);
  EXPECT_EQ(memoryLowerBound(model, config, c, /*bf16=*/false), expected);
  // Without checkpointing each block keeps its linears' and SwiGLU's
  // inputs: 3 dim + 3 FFN hidden per token (debug model: 256, 768).
  c.ac = "none";
  EXPECT_EQ(model.ffnHidden, 768);
  expected =
      int64_t(double(params) / 4 * 16 + 6.0 * 512 * (3 * 256 + 3 * 768) * 4);
  EXPECT_EQ(memoryLowerBound(model, config, c, /*bf16=*/false), expected);
  // Under pp the schedule's live block-microbatches replace the share.
  c.mesh.pp = 2;
  c.mesh.dpShard = 2;
  c.microbatchSize = 1;
  expected =
      int64_t(double(params) / 4 * 16 + 5.0 * 256 * (3 * 256 + 3 * 768) * 4);
  EXPECT_EQ(memoryLowerBound(model, config, c, false, /*liveBlocks=*/5),
            expected);
}

TEST(PlanTest, SearchKeepsTheBestAndAccountsForEveryCandidate) {
  LlamaArgs model = debugModel();
  TrainConfig config;
  config.training.globalBatchSize = 8;
  config.training.seqLen = 256;
  Request r = request(4);
  // A predictor that favours FSDP with the largest local batch and no
  // recomputation, and says everything with local batch 8 is over memory.
  r.memoryBytes = int64_t(1) << 30;
  int64_t calls = 0;
  Predictor fake = [&](const TrainConfig &,
                       const Candidate &c) -> llvm::Expected<Score> {
    ++calls;
    Score s;
    s.tokensPerSecondPerDevice =
        1000.0 * double(c.localBatch) / double(c.mesh.worldSize() / 4) -
        10.0 * (c.mesh.tp + c.mesh.cp + c.mesh.pp + c.mesh.dpReplicate) -
        (c.ac == "none" ? 0
         : c.ac == "op" ? 50
                        : 100);
    s.peakBytes = c.localBatch >= 2 ? (int64_t(2) << 30) : 1000;
    return s;
  };
  PlanResult result = search(model, config, r, fake);
  const Counts &n = result.counts;
  EXPECT_EQ(n.enumerated, n.rejectedByRule + n.prunedByBound + n.dominated +
                              n.prunedByRoofline + n.overTime +
                              n.prunedBySmallest + n.predicted);
  EXPECT_EQ(n.predicted, n.rejectedByCompiler + n.overMemory + n.fitted);
  EXPECT_EQ(n.predicted, calls);
  ASSERT_FALSE(result.fitted.empty());
  // Local batch 2 is over memory: FSDP 4 with local batch 1, no AC.
  const Candidate &best = result.fitted.front().candidate;
  EXPECT_EQ(best.mesh.dpShard, 4);
  EXPECT_EQ(best.localBatch, 1);
  EXPECT_EQ(best.ac, "none");
  EXPECT_EQ(best.accumulation, 2);
  // Once AC none fits at local batch 1, selective AC at local batch 1 is
  // dominated and never predicted; full AC appears only as the probe of a
  // layout's smallest plan.
  for (const Ranked &f : result.fitted)
    EXPECT_NE(f.candidate.ac, "op");
  for (size_t i = 1; i < result.fitted.size(); ++i)
    EXPECT_GE(result.fitted[i - 1].score.tokensPerSecondPerDevice,
              result.fitted[i].score.tokensPerSecondPerDevice);
  // Schedules that cannot run local / size microbatches (Interleaved1F1B
  // with fewer than pp, a V schedule's stage count) are titan's rejections.
  EXPECT_GT(n.rejectedByRule, 0);
  EXPECT_TRUE(n.reasons.count("buildSchedule") ||
              n.reasons.count("pipeline stages"));
}

} // namespace
