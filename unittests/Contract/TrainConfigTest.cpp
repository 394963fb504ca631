//===- TrainConfigTest.cpp - TorchTitan-style training configuration ------===//

#include "titan/Contract/TrainConfig.h"

#include "gtest/gtest.h"

using namespace titan;

namespace {
struct Split {
  std::vector<ConfigOverride> overrides;
  std::vector<std::string> rest;
};

Split split(std::vector<const char *> args) {
  Split s;
  std::vector<const char *> rest;
  llvm::Error e = extractConfigOverrides(args, s.overrides, rest);
  EXPECT_FALSE(static_cast<bool>(e)) << llvm::toString(std::move(e));
  s.rest.assign(rest.begin(), rest.end());
  return s;
}
} // namespace

TEST(ConfigOverrides, BothSpellingsAndToolArgs) {
  Split s = split({"--training.steps", "5", "--emit=titan", "-o", "out.mlir",
                   "--optimizer.lr=0.01"});
  ASSERT_EQ(s.overrides.size(), 2u);
  EXPECT_EQ(s.overrides[0].key, "training.steps");
  EXPECT_EQ(s.overrides[0].value, "5");
  EXPECT_EQ(s.overrides[1].key, "optimizer.lr");
  EXPECT_EQ(s.overrides[1].value, "0.01");
  EXPECT_EQ(s.rest,
            (std::vector<std::string>{"--emit=titan", "-o", "out.mlir"}));
}

TEST(ConfigOverrides, BareBooleanFlags) {
  Split s = split(
      {"--compile.enable", "--training.steps", "3", "--checkpoint.enable"});
  ASSERT_EQ(s.overrides.size(), 3u);
  EXPECT_EQ(s.overrides[0].value, "true");
  EXPECT_EQ(s.overrides[2].key, "checkpoint.enable");
  EXPECT_EQ(s.overrides[2].value, "true");
}

// A bare boolean flag takes no option after it as its value: the tool's own
// options (-o) stay the tool's.
TEST(ConfigOverrides, BareBooleanFlagBeforeAToolOption) {
  Split s = split({"--debug.offload_state", "-o", "out", "--compile.enable",
                   "False", "--checkpoint.enable", "1"});
  ASSERT_EQ(s.overrides.size(), 3u);
  EXPECT_EQ(s.overrides[0].key, "debug.offload_state");
  EXPECT_EQ(s.overrides[0].value, "true");
  EXPECT_EQ(s.overrides[1].value, "False");
  EXPECT_EQ(s.overrides[2].value, "1");
  EXPECT_EQ(s.rest, (std::vector<std::string>{"-o", "out"}));
}

TEST(ConfigOverrides, NegativeValues) {
  Split s = split({"--parallelism.data_parallel_shard_degree", "-1"});
  ASSERT_EQ(s.overrides.size(), 1u);
  EXPECT_EQ(s.overrides[0].value, "-1");
}

TEST(ConfigOverrides, UnknownKeySuggests) {
  std::vector<ConfigOverride> overrides;
  std::vector<const char *> rest;
  const char *args[] = {"--optimizer.lrr", "1"};
  llvm::Error e = extractConfigOverrides(args, overrides, rest);
  ASSERT_TRUE(static_cast<bool>(e));
  EXPECT_EQ(llvm::toString(std::move(e)),
            "unknown option '--optimizer.lrr'; did you mean 'optimizer.lr'?");
}

TEST(TrainConfig, TorchTitanDefaults) {
  llvm::Expected<TrainConfig> config = loadTrainConfig({});
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->model.flavor, "debugmodel");
  EXPECT_EQ(config->training.localBatchSize, 8);
  EXPECT_EQ(config->training.globalBatchSize, -1);
  EXPECT_DOUBLE_EQ(config->optimizer.beta2, 0.95);
  EXPECT_FALSE(config->lrScheduler.decayRatio.has_value());
  EXPECT_EQ(config->parallelism.dataParallelShardDegree, -1);
  EXPECT_FALSE(config->training.seed.has_value());
}

TEST(TrainConfig, OverridesApplyInOrder) {
  std::vector<ConfigOverride> overrides = {{"lr_scheduler.decay_ratio", "0.5"},
                                           {"training.seed", "7"},
                                           {"debug.seed", "9"}};
  llvm::Expected<TrainConfig> config = loadTrainConfig(overrides);
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_EQ(config->lrScheduler.decayRatio, 0.5);
  EXPECT_EQ(config->training.seed, 9); // debug.seed: an alias
}

TEST(TrainConfig, AllErrorsReported) {
  std::vector<ConfigOverride> overrides = {{"training.steps", "0"},
                                           {"optimizer.lr", "abc"}};
  llvm::Expected<TrainConfig> config = loadTrainConfig(overrides);
  ASSERT_FALSE(static_cast<bool>(config));
  std::string message = llvm::toString(config.takeError());
  EXPECT_NE(message.find("training.steps: 0 is out of range; must be >= 1"),
            std::string::npos);
  EXPECT_NE(message.find("optimizer.lr: expected a number, got 'abc'"),
            std::string::npos);
}

TEST(TrainConfig, AliasesSetTheSameField) {
  std::vector<ConfigOverride> overrides = {{"debug.deterministic", "true"},
                                           {"job.print_args", "true"}};
  llvm::Expected<TrainConfig> config = loadTrainConfig(overrides);
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());
  EXPECT_TRUE(config->training.deterministic);
  EXPECT_TRUE(config->job.printConfig);
}

TEST(TrainConfig, RefusedKeysOnlyAtTorchTitansDefault) {
  std::vector<ConfigOverride> atDefault = {
      {"parallelism.expert_parallel_degree", "1"},
      {"fault_tolerance.enable", "false"}};
  llvm::Expected<TrainConfig> config = loadTrainConfig(atDefault);
  ASSERT_TRUE(static_cast<bool>(config)) << llvm::toString(config.takeError());

  std::vector<ConfigOverride> changed = {
      {"parallelism.expert_parallel_degree", "4"}};
  config = loadTrainConfig(changed);
  ASSERT_FALSE(static_cast<bool>(config));
  EXPECT_NE(llvm::toString(config.takeError())
                .find("parallelism.expert_parallel_degree = 4 is not "
                      "supported: Expert parallelism needs MoE layers"),
            std::string::npos);
}
