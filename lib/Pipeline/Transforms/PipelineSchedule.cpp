//===- PipelineSchedule.cpp - the schedule's action lists in the IR -------===//
//
// dist-pipeline-schedule writes every pipeline rank's action list, with the
// transfers it implies, into the module's dist.pipeline attribute (the
// runtime executes the rank's own list); dist-pipeline-verify checks a
// list, written by the pass or by hand, before anything runs it. Both read
// the module's stage layout and hand it to lib/Pipeline, so they live here
// rather than with the dist passes, which know no schedule.
//
//===----------------------------------------------------------------------===//

#include "titan/Pipeline/Transforms/Passes.h"

#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Pipeline/Schedule.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace titan::dist {
#define GEN_PASS_DEF_DISTPIPELINESCHEDULE
#define GEN_PASS_DEF_DISTPIPELINEVERIFY
#include "titan/Pipeline/Transforms/Passes.h.inc"
} // namespace titan::dist

using namespace mlir;
using namespace titan;
using namespace titan::dist;

namespace {

/// The stage layout of the module's dist.pipeline (no actions yet), or
/// null after an error on the module.
std::optional<PipelineSchedule> pipelineShape(ModuleOp module, StringRef pass) {
  auto pipeline =
      module->getAttrOfType<DictionaryAttr>(DistDialect::kPipelineAttrName);
  MeshAttr mesh = getMesh(module);
  if (!pipeline || !mesh) {
    module.emitError() << pass
                       << ": the module has no dist.pipeline (run "
                          "dist-pipeline-split first)";
    return std::nullopt;
  }
  PipelineSchedule s;
  s.ranks = mesh.getPp();
  s.stages = pipeline.getAs<IntegerAttr>("num_stages").getInt();
  s.stagesOfRank.resize(size_t(s.ranks));
  for (auto [stage, rank] : llvm::enumerate(
           pipeline.getAs<DenseI64ArrayAttr>("stage_ranks").asArrayRef())) {
    if (rank < 0 || rank >= s.ranks) {
      module.emitError() << pass << ": stage " << stage
                         << " is on pipeline rank " << rank
                         << ", outside the mesh's pp = " << s.ranks;
      return std::nullopt;
    }
    s.stagesOfRank[size_t(rank)].push_back(int64_t(stage));
  }
  if (auto name = pipeline.getAs<StringAttr>("schedule"))
    s.name = name.str();
  if (auto m = pipeline.getAs<IntegerAttr>("microbatches"))
    s.microbatches = m.getInt();
  return s;
}

struct DistPipelineSchedulePass
    : titan::dist::impl::DistPipelineScheduleBase<DistPipelineSchedulePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<PipelineSchedule> shape =
        pipelineShape(module, "dist-pipeline-schedule");
    if (!shape)
      return signalPassFailure();
    if (microbatches < 1) {
      module.emitError() << "dist-pipeline-schedule: microbatches must be "
                            ">= 1, got "
                         << int64_t(microbatches);
      return signalPassFailure();
    }
    PipelinePlan plan;
    plan.ranks = shape->ranks;
    plan.stages.resize(size_t(shape->stages));
    plan.stagesOfRank = shape->stagesOfRank;
    llvm::Expected<PipelineSchedule> schedule =
        csv.empty() ? buildSchedule(shape->name, plan, microbatches)
                    : loadScheduleCSV(csv, plan, microbatches);
    if (!schedule) {
      module.emitError() << "dist-pipeline-schedule: "
                         << llvm::toString(schedule.takeError());
      return signalPassFailure();
    }
    std::vector<std::vector<std::string>> rows = lowerSchedule(*schedule);
    if (llvm::Expected<PipelineSchedule> checked =
            verifyLoweredSchedule(rows, *schedule);
        !checked) {
      module.emitError() << "dist-pipeline-schedule: "
                         << llvm::toString(checked.takeError());
      return signalPassFailure();
    }
    Builder b(module.getContext());
    SmallVector<Attribute> lists;
    for (const std::vector<std::string> &row : rows) {
      SmallVector<Attribute> actions;
      for (const std::string &a : row)
        actions.push_back(b.getStringAttr(a));
      lists.push_back(b.getArrayAttr(actions));
    }
    NamedAttrList info(
        module->getAttrOfType<DictionaryAttr>(DistDialect::kPipelineAttrName));
    info.set("microbatches", b.getI64IntegerAttr(microbatches));
    info.set("actions", b.getArrayAttr(lists));
    if (!csv.empty())
      info.set("schedule_csv", b.getStringAttr(csv));
    module->setAttr(DistDialect::kPipelineAttrName,
                    info.getDictionary(module.getContext()));
  }
};

struct DistPipelineVerifyPass
    : titan::dist::impl::DistPipelineVerifyBase<DistPipelineVerifyPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    std::optional<PipelineSchedule> shape =
        pipelineShape(module, "dist-pipeline-verify");
    if (!shape)
      return signalPassFailure();
    auto pipeline =
        module->getAttrOfType<DictionaryAttr>(DistDialect::kPipelineAttrName);
    auto lists = pipeline.getAs<ArrayAttr>("actions");
    if (!lists || !pipeline.getAs<IntegerAttr>("microbatches")) {
      module.emitError() << "dist-pipeline-verify: dist.pipeline has no "
                            "actions and microbatches (run "
                            "dist-pipeline-schedule first)";
      return signalPassFailure();
    }
    std::vector<std::vector<std::string>> rows;
    for (Attribute list : lists) {
      auto actions = dyn_cast<ArrayAttr>(list);
      if (!actions) {
        module.emitError() << "dist-pipeline-verify: each rank's actions "
                              "must be an array of strings";
        return signalPassFailure();
      }
      std::vector<std::string> &row = rows.emplace_back();
      for (Attribute a : actions) {
        auto text = dyn_cast<StringAttr>(a);
        if (!text) {
          module.emitError()
              << "dist-pipeline-verify: action " << a << " is not a string";
          return signalPassFailure();
        }
        row.push_back(text.str());
      }
    }
    if (llvm::Expected<PipelineSchedule> checked =
            verifyLoweredSchedule(rows, *shape);
        !checked) {
      module.emitError() << "dist-pipeline-verify: "
                         << llvm::toString(checked.takeError());
      return signalPassFailure();
    }
  }
};

} // namespace
