//===- DriverTestUtil.h - the driver tests' debug-model job -----*- C++ -*-===//
//
// The job every driver test starts from: TorchTitan's debug model config
// (models/llama3/train_configs/debug_model.toml) with short sequences, so
// that each compilation takes milliseconds.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_UNITTESTS_DRIVER_DRIVERTESTUTIL_H
#define TITAN_UNITTESTS_DRIVER_DRIVERTESTUTIL_H

#include "titan/Driver/Driver.h"

#include "gtest/gtest.h"

#include <string>
#include <utility>
#include <vector>

namespace titan::driver::test {

/// The debug model's config with `overrides` (`section.key`, value) on
/// top, its sequence 64 tokens unless they say otherwise.
inline TrainConfig
debugConfig(std::vector<std::pair<std::string, std::string>> overrides = {}) {
  std::vector<ConfigOverride> all = {{"job.config_file",
                                      TITAN_DEFAULT_MODELS_DIR
                                      "/llama3/train_configs/debug_model.toml"},
                                     {"training.seq_len", "64"}};
  for (auto &[key, value] : overrides)
    all.push_back({key, value});
  llvm::Expected<TrainConfig> config = loadTrainConfig(all);
  if (!config) {
    ADD_FAILURE() << llvm::toString(config.takeError());
    return TrainConfig();
  }
  return std::move(*config);
}

/// The model `config` names.
inline LlamaArgs modelOf(const TrainConfig &config) {
  llvm::Expected<LlamaArgs> model = resolveModel(config);
  if (!model) {
    ADD_FAILURE() << llvm::toString(model.takeError());
    return LlamaArgs();
  }
  return std::move(*model);
}

/// What emitStage writes for `stage`, or its error's text after "error: ".
inline std::string emit(const TrainConfig &config, CompileOptions options) {
  std::string text;
  llvm::raw_string_ostream os(text);
  mlir::TimingScope untimed;
  LlamaArgs model = modelOf(config);
  if (llvm::Error e = emitStage(config, model, options, os, untimed))
    return "error: " + llvm::toString(std::move(e));
  return text;
}

/// Options for `stage` on `worldSize` ranks.
inline CompileOptions at(Stage stage, int64_t worldSize = 0) {
  CompileOptions options;
  options.stage = stage;
  options.worldSize = worldSize;
  return options;
}

} // namespace titan::driver::test

#endif // TITAN_UNITTESTS_DRIVER_DRIVERTESTUTIL_H
