//===- Manifest.cpp - what a training executable knows of its model -------===//

#include "Manifest.h"

#include "titan/Config/TrainConfig.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Model/LlamaArgs.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace titan;

std::string titan::buildManifest(const LlamaArgs &args,
                                 const TrainConfig &config,
                                 mlir::ModuleOp module) {
  llvm::json::Array params;
  for (const ParameterArgument &p : getParameterArguments(
           module.lookupSymbol<mlir::func::FuncOp>("forward")))
    params.push_back(
        llvm::json::Object{{"name", p.name.getValue()},
                           {"shape", llvm::json::Array(p.type.getShape())}});
  std::string toml;
  llvm::raw_string_ostream os(toml);
  printTrainConfig(config, os);
  llvm::json::Object manifest{
      {"model", config.model.name + " " + args.name},
      {"local_batch_size", config.training.localBatchSize},
      {"seq_len", config.training.seqLen},
      {"vocab_size", args.vocabSize},
      {"dim", args.dim},
      {"flops_per_token", trainingFlopsPerToken(args, config.training.seqLen)},
      {"params", std::move(params)},
      {"config", toml}};
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(manifest));
  return text;
}
