//===- ErrorTest.cpp - what the driver refuses, as llvm::Error ------------===//
//
// Impossible or unimplemented configs come back as errors that name the
// keys at fault (never an exit), from every entry point.
//
//===----------------------------------------------------------------------===//

#include "DriverTestUtil.h"

#include "titan/InitTitan.h"

using namespace titan;
using namespace titan::driver;
using namespace titan::driver::test;

namespace {

bool contains(const std::string &text, llvm::StringRef part) {
  return llvm::StringRef(text).contains(part);
}

TEST(DriverErrorTest, AnUndividedHeadCountNamesTheTensorParallelDegree) {
  std::string text =
      emit(debugConfig({{"parallelism.tensor_parallel_degree", "3"}}),
           at(Stage::Kernel, 3));
  EXPECT_TRUE(contains(text, "error: parallelism.tensor_parallel_degree (3) "
                             "does not divide n_heads"))
      << text;
}

TEST(DriverErrorTest, DegreesThatMissTheWorldSizeNameTheirKeys) {
  std::string text =
      emit(debugConfig({{"parallelism.tensor_parallel_degree", "2"}}),
           at(Stage::Partitioned, 3));
  EXPECT_TRUE(contains(text, "error: parallelism.data_parallel_shard_degree "
                             "= -1 takes the remaining ranks, but "
                             "--world-size (3) is not divisible"))
      << text;
}

TEST(DriverErrorTest, AnUnimplementedDtypeNamesTheKey) {
  std::string text =
      emit(debugConfig({{"training.dtype", "bfloat16"}}), at(Stage::Train));
  EXPECT_TRUE(contains(text, "error: training.dtype = \"bfloat16\"")) << text;
  // The stages before the training phase do not depend on it.
  EXPECT_FALSE(contains(emit(debugConfig({{"training.dtype", "bfloat16"}}),
                             at(Stage::Partitioned)),
                        "error:"));
}

TEST(DriverErrorTest, AMicrobatchThatDoesNotDivideTheBatchNamesBothKeys) {
  // The config loader refuses it too; a caller can still build one.
  TrainConfig config =
      debugConfig({{"parallelism.pipeline_parallel_degree", "2"},
                   {"parallelism.pipeline_parallel_microbatch_size", "2"}});
  config.training.localBatchSize = 3;
  std::string text = emit(config, at(Stage::Kernel));
  EXPECT_TRUE(contains(text, "error: training.local_batch_size (3) must be "
                             "divisible by parallelism.pipeline_parallel_"
                             "microbatch_size (2)"))
      << text;
}

TEST(DriverErrorTest, APipelinedValidationBatchSplitsIntoTheMicrobatches) {
  // Under pipeline parallelism a validation batch runs in the training
  // schedule's microbatches (TorchTitan's pp_schedule.eval).
  std::string text =
      emit(debugConfig({{"parallelism.pipeline_parallel_degree", "2"},
                        {"training.local_batch_size", "4"},
                        {"validation.enable", "true"},
                        {"validation.local_batch_size", "3"}}),
           at(Stage::Kernel));
  EXPECT_TRUE(contains(text, "error: validation.local_batch_size (3) must be "
                             "divisible by the pipeline's 4 microbatches"))
      << text;
}

TEST(DriverErrorTest, AScheduleTimelineNeedsPipelineParallelism) {
  CompileOptions options = at(Stage::Schedule);
  options.scheduleTimeline = "unused.svg";
  EXPECT_EQ(emit(debugConfig(), options),
            "error: --schedule-timeline draws a pipeline schedule; "
            "parallelism.pipeline_parallel_degree is 1");
}

TEST(DriverErrorTest, AnUnknownTargetNamesTheRegisteredOnes) {
  CompileOptions options = at(Stage::Kernel);
  options.target = "tpu";
  EXPECT_EQ(emit(debugConfig(), options),
            "error: unknown target 'tpu'; the registered ones are cpu, cuda");
}

TEST(DriverErrorTest, AnUnknownFlavorNamesTheKey) {
  TrainConfig config = debugConfig({{"model.flavor", "nosuch"}});
  llvm::Expected<LlamaArgs> model = resolveModel(config);
  ASSERT_FALSE(model);
  EXPECT_TRUE(contains(llvm::toString(model.takeError()),
                       "model.flavor: unknown flavor 'nosuch'"));
}

TEST(DriverErrorTest, CompileToModuleGivesTheSameErrors) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  TrainConfig config =
      debugConfig({{"parallelism.tensor_parallel_degree", "3"}});
  LlamaArgs model = modelOf(config);
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      compileToModule(context, config, model, at(Stage::Partitioned, 3));
  ASSERT_FALSE(module);
  EXPECT_TRUE(contains(llvm::toString(module.takeError()),
                       "parallelism.tensor_parallel_degree (3) does not "
                       "divide n_heads"));
}

} // namespace
