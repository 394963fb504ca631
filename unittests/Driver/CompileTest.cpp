//===- CompileTest.cpp - the driver's stages on the debug model -----------===//
//
// Each stage of the debug model's compilation through the library: the
// IR stages' modules (compileToModule) and the text stages' reports
// (emitStage), the pass manager hook, and the stage table titan-compile's
// --emit lists.
//
//===----------------------------------------------------------------------===//

#include "DriverTestUtil.h"

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/InitTitan.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringSet.h"

using namespace titan;
using namespace titan::driver;
using namespace titan::driver::test;

namespace {

class DriverCompileTest : public ::testing::Test {
protected:
  DriverCompileTest() : context(registry()) {}

  static mlir::DialectRegistry registry() {
    mlir::DialectRegistry r;
    registerAllDialects(r);
    return r;
  }

  /// The debug model's program at `stage` on `worldSize` ranks.
  mlir::OwningOpRef<mlir::ModuleOp> compile(Stage stage,
                                            int64_t worldSize = 0) {
    TrainConfig config = debugConfig();
    LlamaArgs model = modelOf(config);
    llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
        compileToModule(context, config, model, at(stage, worldSize));
    if (!module) {
      ADD_FAILURE() << llvm::toString(module.takeError());
      return {};
    }
    return std::move(*module);
  }

  mlir::MLIRContext context;
};

TEST(DriverStageTableTest, NamesEveryStageInOrder) {
  llvm::ArrayRef<StageInfo> table = stages();
  ASSERT_EQ(table.size(), size_t(Stage::Cost) + 1);
  llvm::StringSet<> names;
  for (auto [i, stage] : llvm::enumerate(table)) {
    EXPECT_EQ(size_t(stage.stage), i);
    EXPECT_FALSE(stage.description.empty());
    EXPECT_TRUE(names.insert(stage.name).second) << stage.name.str();
  }
  EXPECT_EQ(table[size_t(Stage::Object)].name, "obj");
  EXPECT_EQ(table[size_t(Stage::Exe)].name, "exe");
}

TEST_F(DriverCompileTest, TitanIsTheImportedForward) {
  mlir::OwningOpRef<mlir::ModuleOp> module = compile(Stage::Titan);
  ASSERT_TRUE(module);
  EXPECT_TRUE(module->lookupSymbol<mlir::func::FuncOp>("forward"));
  EXPECT_FALSE(dist::getMesh(*module));
}

TEST_F(DriverCompileTest, PartitionedCarriesTheMesh) {
  mlir::OwningOpRef<mlir::ModuleOp> module = compile(Stage::Partitioned, 2);
  ASSERT_TRUE(module);
  dist::MeshAttr mesh = dist::getMesh(*module);
  ASSERT_TRUE(mesh);
  // data_parallel_shard_degree = -1 takes the ranks the others leave.
  EXPECT_EQ(mesh.getDpShard(), 2);
  EXPECT_EQ(mesh.getWorldSize(), 2);
}

TEST_F(DriverCompileTest, TrainHasTheStepAndTheOptimizer) {
  mlir::OwningOpRef<mlir::ModuleOp> module = compile(Stage::Train);
  ASSERT_TRUE(module);
  EXPECT_TRUE(module->lookupSymbol<mlir::func::FuncOp>("forward_backward"));
  EXPECT_TRUE(module->lookupSymbol<mlir::func::FuncOp>("optimizer_step"));
}

TEST_F(DriverCompileTest, KernelHasAMemoryPlan) {
  mlir::OwningOpRef<mlir::ModuleOp> module = compile(Stage::Kernel);
  ASSERT_TRUE(module);
  EXPECT_GT(kernel::getArenaBytes(*module), 0);
}

TEST_F(DriverCompileTest, LLVMIsLowered) {
  mlir::OwningOpRef<mlir::ModuleOp> module = compile(Stage::LLVM);
  ASSERT_TRUE(module);
  int64_t llvmFunctions = 0;
  module->walk([&](mlir::LLVM::LLVMFuncOp) { ++llvmFunctions; });
  EXPECT_GT(llvmFunctions, 0);
  EXPECT_FALSE(module->lookupSymbol<mlir::func::FuncOp>("forward_backward"));
}

TEST_F(DriverCompileTest, RefusesStagesWithoutOneModule) {
  TrainConfig config = debugConfig();
  LlamaArgs model = modelOf(config);
  for (Stage stage : {Stage::Summary, Stage::Memory, Stage::Exe}) {
    llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
        compileToModule(context, config, model, at(stage));
    ASSERT_FALSE(module);
    EXPECT_NE(llvm::toString(module.takeError()).find("not one of the IR"),
              std::string::npos);
  }
  TrainConfig pp = debugConfig({{"parallelism.pipeline_parallel_degree", "2"}});
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> module =
      compileToModule(context, pp, model, at(Stage::Kernel));
  ASSERT_FALSE(module);
  EXPECT_NE(llvm::toString(module.takeError()).find("one program per "),
            std::string::npos);
}

TEST(DriverEmitTest, PipelineNamesThePhasesAndTheirOptions) {
  std::string text = emit(debugConfig(), at(Stage::Pipeline, 2));
  for (const char *phase :
       {"builtin.module(titan-partition-pipeline{", "titan-training-pipeline{",
        "titan-execution-pipeline{", "titan-lowering-pipeline{"})
    EXPECT_NE(text.find(phase), std::string::npos) << phase << "\n" << text;
  EXPECT_NE(text.find("dp-shard=2"), std::string::npos) << text;
  EXPECT_NE(text.find("ac-mode=selective"), std::string::npos) << text;
}

TEST(DriverEmitTest, PipelineHasOneInvocationPerPipelineRank) {
  std::string text =
      emit(debugConfig({{"parallelism.pipeline_parallel_degree", "2"},
                        {"training.local_batch_size", "2"}}),
           at(Stage::Pipeline));
  EXPECT_NE(text.find("// pipeline rank 0\n"), std::string::npos) << text;
  EXPECT_NE(text.find("// pipeline rank 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("symbol-prefix=titan_pp1_"), std::string::npos) << text;
}

TEST(DriverEmitTest, SummaryReadsTheModelAndTheRanks) {
  std::string text = emit(debugConfig(), at(Stage::Summary, 2));
  EXPECT_EQ(text.rfind("model llama3 / debugmodel\n", 0), 0u) << text;
  EXPECT_NE(text.find("per rank (mesh pp 1 x dp_replicate 1 x dp_shard 2"),
            std::string::npos)
      << text;
}

TEST(DriverEmitTest, ScheduleUnderPipelineParallelismIsThePipelineSchedule) {
  std::string text =
      emit(debugConfig({{"parallelism.pipeline_parallel_degree", "2"},
                        {"training.local_batch_size", "4"}}),
           at(Stage::Schedule));
  EXPECT_EQ(text.rfind("schedule 1F1B: 2 ranks, 2 stages, 4 microbatches", 0),
            0u)
      << text;
}

TEST(DriverEmitTest, MemoryComparesWithoutCheckpointing) {
  std::string text = emit(debugConfig(), at(Stage::Memory));
  EXPECT_NE(text.find("activation checkpointing (selective 2): arena "),
            std::string::npos)
      << text;
}

TEST(DriverEmitTest, ConfigIsTheResolvedToml) {
  std::string text =
      emit(debugConfig({{"training.steps", "7"}}), at(Stage::Config));
  llvm::Expected<TrainConfig> back = loadTrainConfigFromToml(text, "emit", {});
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->training.steps, 7);
  EXPECT_EQ(back->training.seqLen, 64);
}

TEST(DriverEmitTest, SameTextTwice) {
  TrainConfig config = debugConfig();
  EXPECT_EQ(emit(config, at(Stage::Kernel, 2)),
            emit(config, at(Stage::Kernel, 2)));
}

TEST(DriverEmitTest, EveryPhaseGoesThroughThePassManagerHook) {
  CompileOptions options = at(Stage::LLVM);
  int calls = 0;
  options.configurePassManager = [&](mlir::PassManager &) {
    ++calls;
    return mlir::success();
  };
  std::string text = emit(debugConfig(), options);
  EXPECT_NE(text.find("llvm.func"), std::string::npos);
  // partition, training, execution, lowering.
  EXPECT_EQ(calls, 4);
  options.configurePassManager = [](mlir::PassManager &) {
    return mlir::failure();
  };
  EXPECT_EQ(emit(debugConfig(), options),
            "error: compilation failed (see the diagnostics above)");
}

TEST(DriverEmitTest, WarningsGoToTheHandler) {
  CompileOptions options = at(Stage::Train);
  std::vector<std::string> warnings;
  options.warn = [&](llvm::StringRef w) { warnings.push_back(w.str()); };
  emit(debugConfig({{"optimizer.early_step_in_backward", "true"}}), options);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind("optimizer.early_step_in_backward: ", 0), 0u);
}

TEST(DriverEmitTest, ALongerSequenceThanTheModelsIsAWarning) {
  TrainConfig config = debugConfig();
  LlamaArgs model = modelOf(config);
  config.training.seqLen = model.maxSeqLen + 1;
  std::vector<std::string> warnings;
  llvm::Error e = checkJob(
      model, config, [&](llvm::StringRef w) { warnings.push_back(w.str()); });
  ASSERT_FALSE(e) << llvm::toString(std::move(e));
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0],
            "training.seq_len " + std::to_string(config.training.seqLen) +
                " exceeds the model's max_seq_len " +
                std::to_string(model.maxSeqLen) +
                "; max_seq_len becomes the sequence length, as TorchTitan's");
}

} // namespace
