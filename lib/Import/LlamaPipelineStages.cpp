//===- LlamaPipelineStages.cpp - TorchTitan's stage split for Llama -------===//
//
// titan-llama-pipeline-stages: pipeline_llm's plan (lib/Model/
// PipelineStages.cpp) for the forward's layer count, written as the
// module's dist.pipeline, so that dist-pipeline-split cuts stages by module
// names it is given, as TorchTitan's pipeline_module_split does.
//
//===----------------------------------------------------------------------===//

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Dist/IR/DistPlan.h"
#include "titan/Dialect/Titan/IR/ModuleNames.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Import/Passes.h"
#include "titan/Model/PipelineStages.h"

#include "mlir/IR/Builders.h"

namespace titan {
#define GEN_PASS_DEF_TITANLLAMAPIPELINESTAGES
#include "titan/Import/Passes.h.inc"
} // namespace titan

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

/// The transformer layers of `forward`, counted from its parameters as
/// TorchTitan counts the model's `layers` modules.
int64_t countLayers(func::FuncOp forward) {
  int64_t layers = 0;
  for (const ParameterArgument &p : getParameterArguments(forward))
    if (std::optional<int64_t> index = getLayerIndex(p.name.getValue()))
      layers = std::max(layers, *index + 1);
  return layers;
}

/// Each stage's module names; the last stage computes titan's `loss` too
/// (TorchTitan applies its loss function to the last stage's output).
ArrayAttr stageModules(Builder &b, const PipelinePlan &plan) {
  SmallVector<Attribute> stages;
  for (const PipelineStage &stage : plan.stages) {
    SmallVector<Attribute> names;
    for (const std::string &name : stage.moduleNames())
      names.push_back(b.getStringAttr(name));
    if (stage.output)
      names.push_back(b.getStringAttr("loss"));
    stages.push_back(b.getArrayAttr(names));
  }
  return b.getArrayAttr(stages);
}

struct TitanLlamaPipelineStagesPass
    : titan::impl::TitanLlamaPipelineStagesBase<TitanLlamaPipelineStagesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    func::FuncOp forward =
        lookupFunction(module, forwardName, "titan-llama-pipeline-stages");
    if (!forward)
      return signalPassFailure();
    MeshAttr mesh = getMesh(module);
    if (!mesh) {
      module.emitError() << "titan-llama-pipeline-stages: the module has no "
                            "#dist.mesh (run dist-parallelize first)";
      return signalPassFailure();
    }
    llvm::Expected<PipelinePlan> plan = planPipelineStages(
        countLayers(forward), mesh.getPp(), schedule,
        layersPerStage > 0 ? std::optional<int64_t>(layersPerStage)
                           : std::nullopt,
        firstStageLessLayers, lastStageLessLayers);
    if (!plan) {
      forward.emitOpError() << "cannot be split into pipeline stages: "
                            << llvm::toString(plan.takeError());
      return signalPassFailure();
    }
    SmallVector<int64_t> stageRanks(plan->stages.size());
    for (auto [rank, stages] : llvm::enumerate(plan->stagesOfRank))
      for (int64_t s : stages)
        stageRanks[s] = int64_t(rank);
    Builder b(module.getContext());
    module->setAttr(
        DistDialect::kPipelineAttrName,
        b.getDictionaryAttr(
            {b.getNamedAttr("num_stages",
                            b.getI64IntegerAttr(int64_t(plan->stages.size()))),
             b.getNamedAttr("stage_ranks", b.getDenseI64ArrayAttr(stageRanks)),
             b.getNamedAttr("schedule", b.getStringAttr(schedule)),
             b.getNamedAttr(kStageModulesKey, stageModules(b, *plan)),
             // The RoPE angles, a buffer every stage keeps.
             b.getNamedAttr(kEveryStageModulesKey,
                            b.getStrArrayAttr({"freqs_cis"}))}));
  }
};

} // namespace
