//===- EmitProgram.cpp - the stages of a job with one program -------------===//
//
// Without pipeline parallelism every rank runs one program: its training,
// execution and lowering phases, the memory report, the manifest it
// carries, its object and the executable.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/Compilation.h"

#include "titan/Contract/TrainConfig.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Kernel/IR/Kernel.h"
#include "titan/Dialect/Kernel/Transforms/CollectiveSchedule.h"
#include "titan/Dialect/Kernel/Transforms/MemoryPlan.h"
#include "titan/Driver/Link.h"
#include "titan/Driver/Manifest.h"
#include "titan/Driver/MemoryFit.h"
#include "titan/Support/Format.h"
#include "titan/Target/Host/ObjectFile.h"

#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace titan;
using namespace titan::driver;

namespace {
/// The memory report of a single program (every rank runs it).
void printMemoryPlan(mlir::ModuleOp module, llvm::raw_ostream &os) {
  dist::MeshAttr meshAttr = dist::getMesh(module);
  kernel::printMemoryReport(module, meshAttr ? meshAttr.getWorldSize() : 1, os);
}
} // namespace

llvm::Error Compilation::emitProgram(mlir::ModuleOp module,
                                     llvm::raw_ostream &os) {
  Stage stage = options.stage;
  llvm::Expected<manifest::Manifest> manifest =
      buildManifest(model, config, module);
  if (!manifest)
    return manifest.takeError();
  std::optional<int64_t> arenaWithout;
  if (stage == Stage::Memory && config.activationCheckpoint.mode != "none") {
    llvm::Expected<int64_t> arena = arenaWithoutCheckpointing(module);
    if (!arena)
      return arena.takeError();
    arenaWithout = *arena;
  }
  if (llvm::Error e = train(module))
    return e;
  if (stage == Stage::Train)
    return print(module, os);
  if (llvm::Error e = execute(module))
    return e;
  if (stage == Stage::Kernel)
    return print(module, os);
  if (stage == Stage::Schedule) {
    kernel::printCollectiveSchedule(module, os);
    return llvm::Error::success();
  }
  if (stage == Stage::Memory)
    return emitMemoryReport(module, arenaWithout, os);
  if (estimatesMemory())
    printMemoryPlan(module, os);
  if (llvm::Error e = checkMemoryFits(PlannedMemory{
          kernel::getArenaBytes(module), kernel::getHostArenaBytes(module)}))
    return e;
  addProgramToManifest(*manifest, config, mesh, backend, options.cudaArch,
                       module);
  if (llvm::Error e = lower(module))
    return e;
  if (stage == Stage::LLVM)
    return print(module, os);
  return writeProgram(module, std::move(*manifest));
}

// The arena of the same step without activation checkpointing, for the
// memory report's comparison.
llvm::Expected<int64_t>
Compilation::arenaWithoutCheckpointing(mlir::ModuleOp partitioned) {
  mlir::OwningOpRef<mlir::ModuleOp> plain = partitioned.clone();
  TrainingPipelineOptions training;
  trainingOptions(training);
  training.checkpointMode = "none";
  if (llvm::Error e = run(*plain, buildTrainingPipeline, training))
    return std::move(e);
  if (llvm::Error e = addEval(*plain))
    return std::move(e);
  if (llvm::Error e = execute(*plain))
    return std::move(e);
  return kernel::getArenaBytes(*plain);
}

// The memory stage of one program: the plan's report, the saving of
// activation checkpointing, and the timeline chart.
llvm::Error Compilation::emitMemoryReport(mlir::ModuleOp module,
                                          std::optional<int64_t> arenaWithout,
                                          llvm::raw_ostream &os) {
  printMemoryPlan(module, os);
  if (arenaWithout) {
    const auto &ac = config.activationCheckpoint;
    int64_t with = kernel::getArenaBytes(module);
    os << llvm::formatv(
        "activation checkpointing ({0}{1}): arena {2} vs {3} without "
        "(mode none): {4} saved ({5:F1}%)\n",
        ac.mode, ac.mode == "selective" ? " " + ac.selectiveAcOption : "",
        humanBytes(double(with)), humanBytes(double(*arenaWithout)),
        humanBytes(double(*arenaWithout - with)),
        100.0 * double(*arenaWithout - with) /
            double(std::max<int64_t>(*arenaWithout, 1)));
  }
  if (options.memoryTimeline.empty())
    return llvm::Error::success();
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> svg =
      mlir::openOutputFile(options.memoryTimeline, &error);
  if (!svg)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), error);
  kernel::writeMemoryTimelineSVG(module,
                                 config.model.name + " " + model.name +
                                     ": planned memory per rank",
                                 svg->os());
  svg->keep();
  return llvm::Error::success();
}

// The lowered program with its manifest as an object: the output (stage
// Object), or a temporary one linked into the executable.
llvm::Error Compilation::writeProgram(mlir::ModuleOp module,
                                      manifest::Manifest manifest) {
  embedManifest(module, manifest::printManifest(manifest));
  bool objectOnly = options.stage == Stage::Object;
  llvm::Expected<std::string> object = [&] {
    mlir::TimingScope t = timer.nest("emit object");
    return writeObject(module, objectOnly ? options.outputPath : "",
                       "titan-step", backend);
  }();
  if (!object)
    return object.takeError();
  if (objectOnly)
    return llvm::Error::success();
  mlir::TimingScope t = timer.nest("link");
  llvm::Error linked = linkExecutable(
      {{*object}, {}, options.outputPath, manifest.optimizerOnHost}, backend);
  llvm::sys::fs::remove(*object);
  return linked;
}
