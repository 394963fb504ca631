//===- PredictTest.cpp - the predicted step through the driver ------------===//
//
// predictStep on the debug model: a positive step, the same numbers on a
// second call, the hardware a request names, and its errors.
//
//===----------------------------------------------------------------------===//

#include "DriverTestUtil.h"

#include "titan/Driver/Predict.h"

using namespace titan;
using namespace titan::driver;
using namespace titan::driver::test;

namespace {

using HardwareAndTarget =
    llvm::Expected<std::pair<cost::Hardware, const target::TargetBackend *>>;

HardwareRequest gpu(const std::string &name) {
  HardwareRequest request;
  request.gpu = name;
  return request;
}

TEST(DriverPredictTest, AStepOnAGpuIsPositiveAndRepeatable) {
  TrainConfig config = debugConfig();
  LlamaArgs model = modelOf(config);
  llvm::Expected<JobPrediction> first =
      predictStep(model, config, 2, gpu("h100"), nullptr);
  ASSERT_TRUE(bool(first)) << llvm::toString(first.takeError());
  EXPECT_GT(first->stepSeconds, 0);
  EXPECT_GT(first->tokensPerSecondPerDevice, 0);
  EXPECT_GT(first->mfu, 0);
  EXPECT_EQ(first->hardware, "h100");
  EXPECT_EQ(first->gpus, 2);
  EXPECT_EQ(first->mesh.dpShard, 2);
  ASSERT_EQ(first->peakBytes.size(), 1u);
  EXPECT_GT(first->peakBytes[0], 0);
  EXPECT_EQ(first->tokensPerStep, 2.0 * 8 * 64);

  llvm::Expected<JobPrediction> second =
      predictStep(model, config, 2, gpu("h100"), nullptr);
  ASSERT_TRUE(bool(second)) << llvm::toString(second.takeError());
  EXPECT_EQ(first->stepSeconds, second->stepSeconds);
  EXPECT_EQ(first->exposedCommSeconds, second->exposedCommSeconds);
  EXPECT_EQ(first->peakBytes, second->peakBytes);
}

TEST(DriverPredictTest, PipelineParallelismHasABubbleAndAPeakPerRank) {
  TrainConfig config =
      debugConfig({{"parallelism.pipeline_parallel_degree", "2"},
                   {"training.local_batch_size", "4"}});
  LlamaArgs model = modelOf(config);
  llvm::Expected<JobPrediction> p =
      predictStep(model, config, 0, gpu("h100"), nullptr);
  ASSERT_TRUE(bool(p)) << llvm::toString(p.takeError());
  EXPECT_GT(p->stepSeconds, 0);
  EXPECT_GT(p->bubble, 0);
  EXPECT_LT(p->bubble, 1);
  EXPECT_EQ(p->peakBytes.size(), 2u);
  EXPECT_EQ(p->schedule, "1F1B");
}

TEST(DriverPredictTest, TheTargetFollowsTheHardware) {
  HardwareAndTarget h100 = resolveHardware(gpu("h100"));
  ASSERT_TRUE(bool(h100)) << llvm::toString(h100.takeError());
  EXPECT_EQ(h100->second->getName(), "cuda");
  // Without a name: h100, or the CPU for the CPU target.
  HardwareRequest cpuTarget;
  cpuTarget.target = "cpu";
  HardwareAndTarget cpu = resolveHardware(cpuTarget);
  ASSERT_TRUE(bool(cpu)) << llvm::toString(cpu.takeError());
  EXPECT_EQ(cpu->first.name, "cpu");
  EXPECT_EQ(cpu->second->getName(), "cpu");
  HardwareAndTarget none = resolveHardware(HardwareRequest());
  ASSERT_TRUE(bool(none)) << llvm::toString(none.takeError());
  EXPECT_EQ(none->first.name, "h100");
  EXPECT_EQ(none->second->getName(), "cuda");
}

TEST(DriverPredictTest, HardwareErrorsNameTheOption) {
  HardwareAndTarget unknown = resolveHardware(gpu("h999"));
  ASSERT_FALSE(unknown);
  EXPECT_EQ(
      llvm::toString(unknown.takeError())
          .rfind("--gpu h999: unknown hardware; the known ones are h100", 0),
      0u);
  HardwareRequest contradicting = gpu("h100");
  contradicting.target = "cpu";
  HardwareAndTarget contradiction = resolveHardware(contradicting);
  ASSERT_FALSE(contradiction);
  EXPECT_EQ(
      llvm::toString(contradiction.takeError())
          .rfind("--target=cpu contradicts the hardware description 'h100'", 0),
      0u);
}

TEST(DriverPredictTest, AnUnknownTargetNamesTheRegisteredOnes) {
  HardwareRequest request;
  request.target = "tpu";
  HardwareAndTarget unknown = resolveHardware(request);
  ASSERT_FALSE(unknown);
  EXPECT_EQ(llvm::toString(unknown.takeError()),
            "unknown target 'tpu'; the registered ones are cpu, cuda");
}

TEST(DriverPredictTest, AnUnimplementedConfigIsAnError) {
  TrainConfig config = debugConfig({{"training.dtype", "bfloat16"}});
  LlamaArgs model = modelOf(config);
  llvm::Expected<JobPrediction> p =
      predictStep(model, config, 0, gpu("h100"), nullptr);
  ASSERT_FALSE(p);
  EXPECT_EQ(llvm::toString(p.takeError()).rfind("training.dtype = ", 0), 0u);
}

TEST(DriverPredictTest, TheCostStageReportsThePrediction) {
  CompileOptions options = at(Stage::Cost, 2);
  options.hardware = gpu("h100");
  std::string text = emit(debugConfig(), options);
  EXPECT_EQ(text.rfind("predicted step: llama3 / debugmodel on h100, 2 "
                       "devices",
                       0),
            0u)
      << text;
  options.costJSON = true;
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse(emit(debugConfig(), options));
  ASSERT_TRUE(bool(json)) << llvm::toString(json.takeError());
  EXPECT_GT(*json->getAsObject()->getNumber("step_seconds"), 0);
}

} // namespace
