//===- ManifestTest.cpp - a compiled program's manifest -------------------===//
//
// The manifest the driver fills for the debug model: its fields against
// the config they come from (mesh degrees, batch, steps, accumulation,
// target), the parameters against the model, and the memory plan against
// the planned program.
//
//===----------------------------------------------------------------------===//

#include "DriverTestUtil.h"

#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/Driver/Manifest.h"
#include "titan/InitTitan.h"

using namespace titan;
using namespace titan::driver;
using namespace titan::driver::test;

namespace {

/// The manifest of `config`'s program on `worldSize` ranks, as the driver
/// builds it from the partitioned program and completes it from the
/// planned one.
llvm::Expected<manifest::Manifest> manifestOf(const TrainConfig &config,
                                              int64_t worldSize) {
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  LlamaArgs model = modelOf(config);
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> partitioned =
      compileToModule(context, config, model,
                      at(Stage::Partitioned, worldSize));
  if (!partitioned)
    return partitioned.takeError();
  llvm::Expected<manifest::Manifest> m =
      buildManifest(model, config, **partitioned);
  if (!m)
    return m.takeError();
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> planned =
      compileToModule(context, config, model, at(Stage::Kernel, worldSize));
  if (!planned)
    return planned.takeError();
  llvm::Expected<MeshDegrees> mesh = resolveMesh(config, worldSize);
  if (!mesh)
    return mesh.takeError();
  addProgramToManifest(*m, config, *mesh, llvm::cantFail(lookupTarget("cpu")),
                       "sm_90a", **planned);
  EXPECT_EQ(m->arenaBytes, kernel::getArenaBytes(**planned));
  return m;
}

TEST(DriverManifestTest, FieldsMatchTheConfig) {
  TrainConfig config = debugConfig(
      {{"training.steps", "7"}, {"training.global_batch_size", "32"}});
  llvm::Expected<manifest::Manifest> m = manifestOf(config, 2);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  // pp, dp_replicate, dp_shard, cp, tp: the -1 shard degree takes both.
  EXPECT_EQ(m->mesh, (std::vector<int64_t>{1, 1, 2, 1, 1}));
  EXPECT_EQ(m->worldSize(), 2);
  EXPECT_EQ(m->localBatch, 8);
  EXPECT_EQ(m->seqLen, 64);
  // 32 sequences a step, 2 ranks of 8 each: two microbatches.
  EXPECT_EQ(m->accumulationSteps, 2);
  EXPECT_EQ(m->target, "cpu");
  // A target without device architectures records none.
  EXPECT_EQ(m->cudaArch, "");
  EXPECT_FALSE(m->eval);
  EXPECT_GT(m->arenaBytes, 0);
  EXPECT_FALSE(m->slots.empty());
  // The compiled config travels whole.
  llvm::Expected<TrainConfig> back =
      loadTrainConfigFromToml(m->config, "manifest", {});
  ASSERT_TRUE(bool(back)) << llvm::toString(back.takeError());
  EXPECT_EQ(back->training.steps, 7);
  EXPECT_EQ(back->training.globalBatchSize, 32);
  EXPECT_EQ(m->model, "llama3 debugmodel");
}

TEST(DriverManifestTest, ParametersAreTheModelsShardedOverTheMesh) {
  TrainConfig config = debugConfig();
  LlamaArgs model = modelOf(config);
  llvm::Expected<manifest::Manifest> m = manifestOf(config, 2);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  std::vector<ParamSpec> specs = llamaParameters(model);
  ASSERT_EQ(m->params.size(), specs.size());
  for (const manifest::Manifest::Param &p : m->params) {
    auto spec = llvm::find_if(
        specs, [&](const ParamSpec &s) { return s.name == p.name; });
    ASSERT_NE(spec, specs.end()) << p.name;
    EXPECT_EQ(p.shape, spec->shape) << p.name;
    // FSDP shards dim 0 over dp_shard.
    EXPECT_EQ(p.localShape[0], (p.shape[0] + 1) / 2) << p.name;
  }
}

TEST(DriverManifestTest, ValidationRecordsTheEvalStep) {
  TrainConfig config = debugConfig({{"validation.enable", "true"},
                                    {"validation.local_batch_size", "2"},
                                    {"validation.seq_len", "32"}});
  llvm::Expected<manifest::Manifest> m = manifestOf(config, 1);
  ASSERT_TRUE(bool(m)) << llvm::toString(m.takeError());
  ASSERT_TRUE(m->eval);
  EXPECT_EQ(m->eval->localBatch, 2);
  EXPECT_EQ(m->eval->seqLen, 32);
}

TEST(DriverManifestTest, ATargetWithDeviceArchitecturesRecordsIt) {
  TrainConfig config = debugConfig();
  mlir::DialectRegistry registry;
  registerAllDialects(registry);
  mlir::MLIRContext context(registry);
  CompileOptions options = at(Stage::Kernel);
  options.target = "cuda";
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> planned =
      compileToModule(context, config, modelOf(config), options);
  ASSERT_TRUE(bool(planned)) << llvm::toString(planned.takeError());
  manifest::Manifest m;
  addProgramToManifest(m, config, MeshDegrees(),
                       llvm::cantFail(lookupTarget("cuda")), "sm_100a",
                       **planned);
  EXPECT_EQ(m.target, "cuda");
  EXPECT_EQ(m.cudaArch, "sm_100a");
}

} // namespace
