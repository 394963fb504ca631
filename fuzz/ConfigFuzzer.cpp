//===- ConfigFuzzer.cpp - the TOML training config and its checks ---------===//
//
// titan-config-fuzzer: the input is a training config TOML (seeds:
// models/llama3/train_configs and the tests' configs). It is loaded as
// titan-compile loads a --job.config_file, then checked as a compilation
// checks it before compiling: the target's settings, the model it names
// (a built-in flavor by name), the model against the config, and the mesh.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "titan/Compiler/ConfigPipelineOptions.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Driver/ConfigChecks.h"
#include "titan/Driver/Driver.h"
#include "titan/InitTitan.h"
#include "titan/Target/TargetBackend.h"

#include <cstdlib>

using namespace titan;

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  registerAllTargetBackends();
  return 0;
}

namespace {
/// What a compilation checks before it compiles: the target's settings, the
/// model the config names, the model against the config, and the mesh.
llvm::Error checkAsCompilationDoes(const TrainConfig &config) {
  const target::TargetBackend *cpu = target::lookupTargetBackend("cpu");
  if (!cpu)
    std::abort();
  if (llvm::Error e = driver::checkConfig(config, *cpu, [](llvm::StringRef) {}))
    return e;
  // The model by name from the tree's models folder only: a path the
  // mutated config names (a flavor file, hf_assets_path) would make the
  // run depend on the machine (model-toml and hf-config fuzz those files).
  auto isPath = [](llvm::StringRef s) {
    return s.contains('/') || s.contains("..");
  };
  if (isPath(config.model.name) || isPath(config.model.flavor) ||
      !config.model.hfAssetsPath.empty())
    return llvm::Error::success();
  llvm::Expected<LlamaArgs> model =
      resolveLlamaModel(config, TITAN_FUZZ_MODELS_DIR);
  if (!model)
    return model.takeError();
  if (llvm::Error e = driver::checkJob(*model, config, {}))
    return e;
  if (llvm::Error e = driver::checkModelOnTarget(
          *model, *cpu, config.parallelism.contextParallelDegree))
    return e;
  llvm::Expected<MeshDegrees> mesh = resolveMesh(config, /*worldSize=*/0);
  if (!mesh)
    return mesh.takeError();
  return driver::checkMeshSettings(config, *mesh);
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<TrainConfig> config =
      loadTrainConfigFromToml(fuzz::asText(data, size), "fuzz.toml", {});
  if (!config)
    fuzz::expectedRefusal(config.takeError());
  else
    fuzz::expectedRefusal(checkAsCompilationDoes(*config));
  return 0;
}
