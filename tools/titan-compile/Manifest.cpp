//===- Manifest.cpp - what a training executable knows of its model -------===//

#include "Manifest.h"

#include "titan/Config/TrainConfig.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Model/LlamaArgs.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace titan;

llvm::Expected<llvm::json::Object>
titan::buildManifest(const LlamaArgs &args, const TrainConfig &config,
                     mlir::ModuleOp module,
                     llvm::ArrayRef<std::string> functions) {
  dist::MeshAttr mesh = dist::getMesh(module);
  // The argument type is the per-rank shard; the model gives the whole
  // shape (uneven FSDP shards are padded, so it cannot be multiplied back).
  llvm::StringMap<std::vector<int64_t>> wholeShapes;
  for (const ParamSpec &spec : llamaParameters(args))
    wholeShapes[spec.name] = spec.shape;
  llvm::json::Array params;
  llvm::StringSet<> seen;
  for (const std::string &name : functions) {
    auto forward = module.lookupSymbol<mlir::func::FuncOp>(name);
    if (!forward)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "internal error: no function '" + name +
                                         "' to describe in the manifest");
    for (const ParameterArgument &p : getParameterArguments(forward)) {
      if (!seen.insert(p.name.getValue()).second)
        continue;
      llvm::json::Array shardedDims;
      if (auto sharding = forward.getArgAttrOfType<dist::ShardingAttr>(
              p.index, dist::DistDialect::kShardingAttrName))
        for (unsigned d = 0; d < sharding.getDims().size(); ++d) {
          llvm::json::Array names;
          for (llvm::StringRef axis : sharding.getAxes(d))
            names.push_back(axis);
          shardedDims.push_back(std::move(names));
        }
      auto whole = wholeShapes.find(p.name.getValue());
      if (whole == wholeShapes.end())
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(),
            "internal error: parameter '" + p.name.getValue().str() +
                "' of the compiled step is not a parameter of the model");
      params.push_back(llvm::json::Object{
          {"name", p.name.getValue()},
          {"shape", llvm::json::Array(whole->second)},
          {"local_shape", llvm::json::Array(p.type.getShape())},
          {"sharding", std::move(shardedDims)}});
    }
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
  return manifest;
}

void titan::addArenaToManifest(llvm::json::Object &manifest,
                               mlir::ModuleOp module) {
  auto arena = module->getAttrOfType<mlir::IntegerAttr>(
      kernel::KernelDialect::kArenaBytesAttrName);
  auto slots = module->getAttrOfType<mlir::DictionaryAttr>(
      kernel::KernelDialect::kSlotsAttrName);
  llvm::json::Object places;
  for (mlir::NamedAttribute slot : slots) {
    auto range = mlir::cast<mlir::DenseI64ArrayAttr>(slot.getValue());
    places[slot.getName().getValue()] = llvm::json::Array{range[0], range[1]};
  }
  manifest["arena_bytes"] = arena.getInt();
  manifest["slots"] = std::move(places);
  // The mesh-axis groups the steps' collectives use (each collective's
  // third parameter is its axis mask), so the runtime creates their
  // communicators and streams at start, never inside a step.
  std::set<int64_t> masks;
  module.walk([&](kernel::CollectiveStartOp start) {
    mlir::ArrayAttr params = start.getParams();
    if (params.size() >= 3)
      if (auto mask = mlir::dyn_cast<mlir::IntegerAttr>(params[2]))
        masks.insert(mask.getInt());
  });
  llvm::json::Array groups;
  for (int64_t mask : masks)
    groups.push_back(mask);
  manifest["collective_axes"] = std::move(groups);
}

std::string titan::printManifest(const llvm::json::Object &manifest) {
  std::string text;
  llvm::raw_string_ostream(text)
      << llvm::json::Value(llvm::json::Object(manifest));
  return text;
}
