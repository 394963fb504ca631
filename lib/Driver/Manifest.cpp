//===- Manifest.cpp - a compiled program's manifest -----------------------===//
//
// The manifest's fields read off the partitioned and the planned program.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/Manifest.h"

#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/Dialect/Titan/IR/Parameters.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <set>

using namespace titan;
using namespace titan::driver;

llvm::Expected<manifest::Manifest>
driver::buildManifest(const LlamaArgs &args, const TrainConfig &config,
                      mlir::ModuleOp module,
                      llvm::ArrayRef<std::string> functions) {
  auto error = [](const llvm::Twine &message) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "internal error: " + message);
  };
  // The argument type is the per-rank shard; the model gives the whole
  // shape (uneven FSDP shards are padded, so it cannot be multiplied back).
  llvm::StringMap<std::vector<int64_t>> wholeShapes;
  for (const ParamSpec &spec : llamaParameters(args))
    wholeShapes[spec.name] = spec.shape;
  manifest::Manifest m;
  llvm::StringSet<> seen;
  for (const std::string &name : functions) {
    auto forward = module.lookupSymbol<mlir::func::FuncOp>(name);
    if (!forward)
      return error("no function '" + name + "' to describe in the manifest");
    for (const ParameterArgument &p : getParameterArguments(forward)) {
      if (!seen.insert(p.name.getValue()).second)
        continue;
      auto whole = wholeShapes.find(p.name.getValue());
      if (whole == wholeShapes.end())
        return error("parameter '" + p.name.getValue() +
                     "' of the compiled step is not a parameter of the model");
      manifest::Manifest::Param &param = m.params.emplace_back();
      param.name = p.name.getValue().str();
      param.shape = whole->second;
      param.localShape.assign(p.type.getShape().begin(),
                              p.type.getShape().end());
      param.dimAxes.resize(param.shape.size());
      if (auto sharding = forward.getArgAttrOfType<dist::ShardingAttr>(
              p.index, dist::DistDialect::kShardingAttrName))
        for (unsigned d = 0; d < sharding.getDims().size(); ++d)
          for (llvm::StringRef axis : sharding.getAxes(d)) {
            std::optional<manifest::MeshAxis> a = manifest::parseMeshAxis(axis);
            if (!a || d >= param.dimAxes.size())
              return error("parameter '" + param.name +
                           "' has a sharding the manifest cannot hold");
            param.dimAxes[d].push_back(*a);
          }
    }
  }
  m.allParams = m.params;
  if (dist::MeshAttr mesh = dist::getMesh(module)) {
    m.mesh = {mesh.getPp(), mesh.getDpReplicate(), mesh.getDpShard(),
              mesh.getCp(), mesh.getTp()};
    m.loadBalancedAxes = mesh.getLoadBalancedMask();
  }
  llvm::raw_string_ostream toml(m.config);
  printTrainConfig(config, toml);
  m.model = config.model.name + " " + args.name;
  m.hfConfig = hfLlamaConfig(args, "float32");
  m.localBatch = config.training.localBatchSize;
  m.seqLen = config.training.seqLen;
  m.vocab = args.vocabSize;
  m.dim = args.dim;
  m.flopsPerToken = trainingFlopsPerToken(args, config.training.seqLen);
  return m;
}

void driver::addArenaToManifest(manifest::Manifest &m, mlir::ModuleOp module) {
  m.arenaBytes = kernel::getArenaBytes(module);
  for (mlir::NamedAttribute slot : module->getAttrOfType<mlir::DictionaryAttr>(
           kernel::KernelDialect::kSlotsAttrName)) {
    auto range = mlir::cast<mlir::DenseI64ArrayAttr>(slot.getValue());
    m.slots[slot.getName().getValue()] = {range[0], range[1]};
  }
  m.hostArenaBytes = kernel::getHostArenaBytes(module);
  if (auto hostSlots = module->getAttrOfType<mlir::DictionaryAttr>(
          kernel::KernelDialect::kHostSlotsAttrName))
    for (mlir::NamedAttribute slot : hostSlots) {
      auto range = mlir::cast<mlir::DenseI64ArrayAttr>(slot.getValue());
      m.hostSlots[slot.getName().getValue()] = {range[0], range[1]};
    }
  if (auto step = module.lookupSymbol<mlir::func::FuncOp>("optimizer_step"))
    m.optimizerOnHost = step->hasAttr(kernel::KernelDialect::kHostStepAttrName);
  // The mesh-axis groups the steps communicate over (collectives, and
  // kernels that communicate inside the call, such as async TP's rings), so
  // the runtime creates their communicators and streams at start, never
  // inside a step.
  std::set<unsigned> masks;
  module.walk([&](mlir::Operation *op) {
    if (std::optional<unsigned> mask = kernel::communicationAxisMask(op))
      masks.insert(*mask);
  });
  m.collectiveAxes.assign(masks.begin(), masks.end());
}

void driver::addProgramToManifest(manifest::Manifest &m,
                                  const TrainConfig &config,
                                  const MeshDegrees &mesh,
                                  const target::TargetBackend &target,
                                  llvm::StringRef cudaArch,
                                  mlir::ModuleOp module) {
  // The runtime places its state where the plan says.
  addArenaToManifest(m, module);
  if (config.validation.enable)
    m.eval = {config.validation.localBatchSize, config.validation.seqLen};
  m.accumulationSteps = accumulationSteps(config, mesh);
  // What the compiled step does, not what the config asked: with no
  // gradient slot, forward_backward updates the parameters itself
  // (titan-optimizer-in-backward) and optimizer_step is empty.
  auto isGradient = [](llvm::StringRef slot) {
    return slot.starts_with("grad:");
  };
  m.optimizerInBackward = !m.params.empty() &&
                          llvm::none_of(m.slots.keys(), isGradient) &&
                          llvm::none_of(m.hostSlots.keys(), isGradient);
  m.target = target.getName().str();
  if (target.getFeatures().deviceArch)
    m.cudaArch = cudaArch.str();
}
