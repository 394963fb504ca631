//===- Summary.cpp - the summary stage's reports --------------------------===//
//
// The summary's rows: the model read off the imported IR, the training
// step, the parallelism, Float8's plan and each rank's share.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/Summary.h"

#include "titan/Compiler/Pipelines.h"
#include "titan/Contract/Dtype.h"
#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/MeshAxes.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Dialect/Dist/IR/Dist.h"
#include "titan/Dialect/Titan/IR/Parameters.h"
#include "titan/Dialect/Titan/IR/TensorSize.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Model/PipelineStages.h"
#include "titan/Support/Format.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

using namespace titan;
using namespace titan::driver;
using llvm::StringRef;

static std::string gib(double bytes) {
  return llvm::formatv("{0:f2} GiB", bytes / (1024.0 * 1024 * 1024));
}

namespace {
/// The summary's aligned "  key  value" rows.
struct Rows {
  llvm::raw_ostream &os;
  template <typename T> void operator()(StringRef key, const T &value) {
    os << llvm::formatv("  {0,-22}", key) << value << "\n";
  }
};

/// The model's shape and its parameter counts, read off the imported IR
/// (so the summary checks the importer); returns the parameter count.
int64_t printModel(const LlamaArgs &a, const TrainConfig &c,
                   mlir::func::FuncOp func, llvm::raw_ostream &os, Rows row) {
  // Parameter counts come from the IR, so the summary checks the importer.
  int64_t total = 0;
  llvm::StringMap<int64_t> byName;
  for (const ParameterArgument &p : getParameterArguments(func)) {
    byName[p.name.getValue()] = p.type.getNumElements();
    total += p.type.getNumElements();
  }
  int64_t embedding = byName.lookup("tok_embeddings.weight");
  int64_t output = byName.lookup("output.weight");
  int64_t finalNorm = byName.lookup("norm.weight");
  int64_t perLayer = (total - embedding - output - finalNorm) / a.nLayers;

  os << "model " << c.model.name << " / " << a.name << "\n";
  row("source", a.source);
  row("dim", llvm::Twine(a.dim));
  row("n_layers", llvm::Twine(a.nLayers));
  row("n_heads", llvm::formatv("{0} (n_kv_heads {1}, head_dim {2})", a.nHeads,
                               a.nKvHeads, a.headDim()));
  row("ffn_hidden", llvm::Twine(a.ffnHidden));
  row("vocab_size", llvm::Twine(a.vocabSize));
  row("norm_eps", formatNumber(a.normEps));
  std::string rope = "theta " + formatNumber(a.ropeTheta);
  if (const auto &s = a.ropeScaling)
    rope += llvm::formatv(
        ", llama3 scaling (factor {0}, low_freq_factor {1}, "
        "high_freq_factor {2}, original_max_position {3})",
        formatNumber(s->scalingFactor), formatNumber(s->lowFreqFactor),
        formatNumber(s->highFreqFactor), s->originalMaxPositionEmbeddings);
  else
    rope += ", no scaling";
  row("rope", rope);
  row("tied embeddings", a.tieWordEmbeddings ? "yes" : "no");
  row("parameters",
      llvm::formatv("{0} ({1})", formatWithCommas(total), humanCount(total)));
  row("  tok_embeddings", formatWithCommas(embedding));
  row("  per layer", formatWithCommas(perLayer));
  if (!a.tieWordEmbeddings)
    row("  output", formatWithCommas(output));

  return total;
}

/// One training step: batch, FLOPs, state bytes, optimizer and schedule.
void printTrainingStep(const LlamaArgs &a, const TrainConfig &c, int64_t total,
                       llvm::raw_ostream &os, Rows row) {
  int64_t batch = c.training.localBatchSize, seq = c.training.seqLen;
  double flopsPerToken = trainingFlopsPerToken(a, seq);
  int64_t bytes =
      dtypeBytes(parseTorchDtype(c.training.dtype).value_or(Dtype::f32));
  os << "training step\n";
  row("local batch x seq",
      llvm::formatv("{0} x {1} ({2} tokens)", batch, seq, batch * seq));
  row("global batch", c.training.globalBatchSize < 0
                          ? std::string("local batch x data-parallel degree")
                          : std::to_string(c.training.globalBatchSize));
  row("steps", llvm::Twine(c.training.steps));
  row("dtype", c.training.dtype);
  row("FLOPs per token",
      llvm::formatv("{0} (6N + 12·L·H·Q·T)", humanCount(flopsPerToken)));
  row("weights",
      llvm::formatv("{0} ({1})", gib(double(total) * bytes), c.training.dtype));
  if (c.optimizer.earlyStepInBackward)
    row("weights+AdamW", llvm::formatv("{0} unsharded (no gradients kept: "
                                       "optimizer.early_step_in_backward)",
                                       gib(double(total) * (bytes + 8))));
  else
    row("weights+grads+AdamW",
        llvm::formatv("{0} unsharded", gib(double(total) * (bytes * 2 + 8))));
  row("optimizer",
      llvm::formatv("{0} lr {1} betas ({2}, {3}) eps {4} weight_decay {5}",
                    c.optimizer.name, formatNumber(c.optimizer.lr),
                    formatNumber(c.optimizer.beta1),
                    formatNumber(c.optimizer.beta2),
                    formatNumber(c.optimizer.eps),
                    formatNumber(c.optimizer.weightDecay)));
  row("max_norm", c.optimizer.earlyStepInBackward
                      ? "ignored (optimizer.early_step_in_backward)"
                      : formatNumber(c.training.maxNorm));
  std::string decay =
      c.lrScheduler.decayRatio
          ? "last " + formatNumber(*c.lrScheduler.decayRatio) + " of steps"
          : std::string("after warmup");
  row("lr schedule",
      llvm::formatv("warmup {0}, {1} decay {2}, min_lr_factor "
                    "{3}",
                    c.lrScheduler.warmupSteps, c.lrScheduler.decayType, decay,
                    formatNumber(c.lrScheduler.minLrFactor)));
  row("activation ckpt",
      c.activationCheckpoint.mode == "selective"
          ? "selective (" + c.activationCheckpoint.selectiveAcOption + ")"
          : c.activationCheckpoint.mode);
}

/// TorchTitan's stage split (the config was checked to fit before).
void printStages(const LlamaArgs &a, const TrainConfig::Parallelism &p,
                 Rows row) {
  if (llvm::Expected<PipelinePlan> plan = planPipelineStages(
          a.nLayers, p.pipelineParallelDegree, p.pipelineParallelSchedule,
          p.pipelineParallelLayersPerStage,
          p.pipelineParallelFirstStageLessLayers,
          p.pipelineParallelLastStageLessLayers)) {
    for (auto [s, stage] : llvm::enumerate(plan->stages)) {
      std::vector<std::string> parts;
      if (stage.embedding)
        parts.push_back("tok_embeddings");
      if (stage.numLayers > 0)
        parts.push_back(llvm::formatv("layers {0}-{1}", stage.firstLayer,
                                      stage.firstLayer + stage.numLayers - 1)
                            .str());
      if (stage.output)
        parts.push_back("norm, output");
      int64_t rank = 0;
      for (auto [r, ids] : llvm::enumerate(plan->stagesOfRank))
        if (llvm::is_contained(ids, int64_t(s)))
          rank = int64_t(r);
      row(llvm::formatv("  stage {0}", s).str(),
          llvm::formatv("{0} (pp rank {1})", llvm::join(parts, " + "), rank)
              .str());
    }
  } else {
    llvm::consumeError(plan.takeError());
  }
}

/// The config's degree of `axis`, with what it implies where the config
/// says more (dp_shard's -1, tp's sequence and loss parallelism, pp's
/// schedule).
std::string axisDegree(const TrainConfig::Parallelism &p, mesh::Axis axis) {
  switch (axis) {
  case mesh::kPP:
    if (p.pipelineParallelDegree <= 1)
      return "1";
    return llvm::formatv("{0} ({1}, microbatch size {2})",
                         p.pipelineParallelDegree, p.pipelineParallelSchedule,
                         p.pipelineParallelMicrobatchSize);
  case mesh::kDPReplicate:
    return std::to_string(p.dataParallelReplicateDegree);
  case mesh::kDPShard:
    return p.dataParallelShardDegree < 0
               ? std::string("-1 (the remaining ranks)")
               : std::to_string(p.dataParallelShardDegree);
  case mesh::kCP:
    return std::to_string(p.contextParallelDegree);
  case mesh::kTP:
    if (p.tensorParallelDegree <= 1)
      return "1";
    return llvm::formatv("{0} (sequence parallel, loss parallel {1})",
                         p.tensorParallelDegree,
                         p.disableLossParallel ? "off" : "on");
  case mesh::kNumAxes:
    break;
  }
  llvm_unreachable("not an axis");
}

/// The parallel degrees and the world size.
void printParallelism(const LlamaArgs &a, const TrainConfig &c,
                      llvm::raw_ostream &os, Rows row) {
  const auto &p = c.parallelism;
  os << "parallelism\n";
  int64_t fixed = p.dataParallelReplicateDegree * p.tensorParallelDegree *
                  p.pipelineParallelDegree * p.contextParallelDegree;
  // The axes a program spans first, then the pipeline's, whose stage
  // split follows.
  for (const mesh::AxisInfo &axis : mesh::kAxes)
    if (!axis.pipeline)
      row(axis.name, axisDegree(p, axis.axis));
  for (const mesh::AxisInfo &axis : mesh::kAxes)
    if (axis.pipeline)
      row(axis.name, axisDegree(p, axis.axis));
  // TorchTitan's stage split (the config was checked to fit before).
  if (p.pipelineParallelDegree > 1)
    printStages(a, p, row);
  row("world size", p.dataParallelShardDegree < 0
                        ? llvm::formatv("{0} x dp_shard", fixed).str()
                        : std::to_string(fixed * p.dataParallelShardDegree));
}

/// The imported forward's op counts.
void printImportedOps(mlir::func::FuncOp func, llvm::raw_ostream &os,
                      Rows row) {
  llvm::StringMap<int64_t> opCounts;
  func.walk([&](mlir::Operation *op) {
    if (op != func.getOperation())
      ++opCounts[op->getName().getStringRef()];
  });
  std::vector<std::pair<std::string, int64_t>> sorted;
  for (const auto &entry : opCounts)
    sorted.emplace_back(entry.getKey().str(), entry.getValue());
  llvm::sort(sorted);
  os << "imported IR (@" << func.getSymName() << ", " << func.getNumArguments()
     << " arguments)\n";
  for (const auto &[name, count] : sorted)
    row(name, llvm::Twine(count));
}
} // namespace

void driver::printSummary(const LlamaArgs &a, const TrainConfig &c,
                          mlir::ModuleOp module, llvm::raw_ostream &os) {
  auto func = *module.getOps<mlir::func::FuncOp>().begin();
  Rows row{os};
  int64_t total = printModel(a, c, func, os, row);
  printTrainingStep(a, c, total, os, row);
  printParallelism(a, c, os, row);
  printImportedOps(func, os, row);
}

void driver::printPerRankPlan(mlir::ModuleOp module, int64_t arenaBytes,
                              int64_t hostArenaBytes, llvm::raw_ostream &os) {
  auto row = [&](const llvm::Twine &key, const llvm::Twine &value) {
    os << "  " << llvm::left_justify(key.str(), 30) << "  " << value << "\n";
  };
  auto forward = module.lookupSymbol<mlir::func::FuncOp>("forward");
  dist::MeshAttr mesh = dist::getMesh(module);
  if (!forward || !mesh)
    return;
  int64_t params = 0;
  for (const ParameterArgument &p : getParameterArguments(forward))
    params += *getStaticByteSize(p.type);
  os << "per rank (mesh pp " << mesh.getPp() << " x dp_replicate "
     << mesh.getDpReplicate() << " x dp_shard " << mesh.getDpShard() << " x cp "
     << mesh.getCp() << " x tp " << mesh.getTp() << " = " << mesh.getWorldSize()
     << " ranks)\n";
  row("parameters", humanBytes(double(params)));
  // titan-optimizer-in-backward leaves forward_backward no gradient result.
  auto step = module.lookupSymbol<mlir::func::FuncOp>("forward_backward");
  bool gradientsKept =
      !step || llvm::any_of(llvm::seq(step.getNumResults()), [&](unsigned i) {
        return step.getResultAttr(i, TitanDialect::kGradAttrName) != nullptr;
      });
  row("gradients", gradientsKept
                       ? humanBytes(double(params))
                       : std::string("none kept (each dies with its update)"));
  row("AdamW state", humanBytes(2.0 * double(params)));
  // The memory plan: everything a rank holds at its peak (--emit=memory
  // breaks it down).
  row("planned peak (memory plan)", humanBytes(double(arenaBytes)));
  // training.enable_cpu_offload: the state in pinned host memory.
  if (hostArenaBytes > 0)
    row("host memory (cpu offload)", humanBytes(double(hostArenaBytes)));

  // Collectives per step: kind and axes -> (count, payload bytes). The
  // payload is the gathered (all_gather), scattered (reduce_scatter) or
  // reduced (all_reduce) tensor.
  // (eval: validation.enable's forward-only step, per validation batch.)
  for (llvm::StringRef fn : {"forward_backward", "optimizer_step", "eval"}) {
    auto func = module.lookupSymbol<mlir::func::FuncOp>(fn);
    if (!func)
      continue;
    std::map<std::string, std::pair<int64_t, int64_t>> traffic;
    func.walk([&](mlir::Operation *op) {
      if (op->getNumResults() != 1 ||
          !mlir::isa<dist::FutureType>(op->getResult(0).getType()))
        return;
      auto axes = op->getAttrOfType<mlir::ArrayAttr>("axes");
      std::string key = op->getName().stripDialect().drop_back(6).str();
      if (auto reduction =
              op->getAttrOfType<dist::ReductionKindAttr>("reduction"))
        key += " (" + dist::stringifyReductionKind(reduction.getValue()).str() +
               ")";
      key += " [";
      llvm::raw_string_ostream ks(key);
      llvm::interleave(
          axes, ks,
          [&](mlir::Attribute a) {
            ks << mlir::cast<mlir::StringAttr>(a).getValue();
          },
          ",");
      ks << "]";
      int64_t bytes =
          std::max(*getStaticByteSize(op->getOperand(0).getType()),
                   *getStaticByteSize(
                       mlir::cast<dist::FutureType>(op->getResult(0).getType())
                           .getValueType()));
      auto &[count, total] = traffic[key];
      ++count;
      total += bytes;
    });
    os << "collectives per "
       << llvm::StringSwitch<llvm::StringRef>(fn)
              .Case("forward_backward", "microbatch")
              .Case("optimizer_step", "optimizer step")
              .Default("validation batch")
       << " (@" << fn << ")\n";
    if (traffic.empty())
      row("none", "");
    for (const auto &[key, stats] : traffic)
      row(key, llvm::formatv("{0} x, {1}", stats.first,
                             humanBytes(double(stats.second))));
  }
}

void driver::printFloat8Plan(mlir::ModuleOp module,
                             const PartitionPipelineOptions &options,
                             llvm::raw_ostream &os) {
  mlir::OwningOpRef<mlir::ModuleOp> copy = module.clone();
  std::vector<std::string> kept;
  mlir::ScopedDiagnosticHandler handler(
      module.getContext(), [&](mlir::Diagnostic &d) {
        if (d.getSeverity() != mlir::DiagnosticSeverity::Remark)
          return mlir::failure();
        std::string text = d.str();
        StringRef message = text;
        message.consume_front("titan-float8: ");
        kept.push_back(message.str());
        return mlir::success();
      });
  mlir::PassManager pm(module.getContext());
  addFloat8Conversion(pm, options);
  if (mlir::failed(pm.run(*copy)))
    return;
  int64_t converted = 0;
  copy->walk([&](Float8LinearOp) { ++converted; });
  os << llvm::formatv("  {0,-22}", "float8") << options.float8Recipe << ", "
     << converted << " linears in float8, " << kept.size()
     << " in high precision\n";
  for (const std::string &k : kept)
    os << "    " << k << "\n";
}
