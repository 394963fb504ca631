//===- Manifest.cpp - what a training executable knows of its model -------===//

#include "Manifest.h"

#include "titan/Config/TrainConfig.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Model/LlamaArgs.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

using namespace titan;

std::string titan::buildManifest(const LlamaArgs &args,
                                 const TrainConfig &config,
                                 mlir::ModuleOp module) {
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  dist::MeshAttr mesh = dist::getMesh(module);
  llvm::json::Array params;
  for (const ParameterArgument &p : getParameterArguments(forward)) {
    // The argument type is the per-rank shard; the sharding gives the rest.
    llvm::json::Array shardedDims;
    llvm::SmallVector<int64_t> global(p.type.getShape());
    if (auto sharding = forward.getArgAttrOfType<dist::ShardingAttr>(
            p.index, dist::DistDialect::kShardingAttrName)) {
      for (unsigned d = 0; d < sharding.getDims().size(); ++d) {
        llvm::SmallVector<llvm::StringRef> axes = sharding.getAxes(d);
        llvm::json::Array names;
        for (llvm::StringRef axis : axes) {
          names.push_back(axis);
          global[d] *= *mesh.getAxisSize(axis);
        }
        shardedDims.push_back(std::move(names));
      }
    }
    params.push_back(llvm::json::Object{
        {"name", p.name.getValue()},
        {"shape", llvm::json::Array(global)},
        {"local_shape", llvm::json::Array(p.type.getShape())},
        {"sharding", std::move(shardedDims)}});
  }
  llvm::json::Array meshSizes =
      mesh ? llvm::json::Array{mesh.getPp(), mesh.getDpReplicate(),
                               mesh.getDpShard(), mesh.getCp(), mesh.getTp()}
           : llvm::json::Array{1, 1, 1, 1, 1};
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
      {"mesh", std::move(meshSizes)},
      {"config", toml}};
  std::string text;
  llvm::raw_string_ostream(text) << llvm::json::Value(std::move(manifest));
  return text;
}
