//===- ConfigChecks.cpp - what a compilation refuses or warns about -------===//
//
// The config's errors and warnings, the CUDA build's architectures and
// cuBLASLt's FP8 shape rules.
//
//===----------------------------------------------------------------------===//

#include "titan/Driver/ConfigChecks.h"

#include "titan/Compiler/ConfigPipelineOptions.h"
#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Dialect/Titan/IR/ModuleNames.h"
#include "titan/Dialect/Titan/IR/TitanOps.h"
#include "titan/Support/Format.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace titan;
using namespace titan::driver;

namespace {
/// Settings that would change what the step computes or writes, which
/// titan does not implement yet: one message each, naming the key.
std::vector<std::string>
unsupportedSettings(const TrainConfig &c, const target::TargetBackend &target) {
  std::vector<std::string> errors;
  bool float8 = c.float8.enabled(c.model.converters);
  for (const std::string &converter : c.model.converters)
    if (converter != "float8" && converter != "quantize.linear.float8")
      errors.push_back("model.converters: '" + converter +
                       "' is not implemented (titan has the Float8 linear "
                       "converter, \"quantize.linear.float8\")");
  // TorchTitan v0.2.0 asserts this (components/quantization/float8.py).
  if (float8 && !c.float8.recipeName.empty() &&
      c.float8.enableFsdpFloat8AllGather)
    errors.push_back("quantize.linear.float8.enable_fsdp_float8_all_gather "
                     "cannot be combined with recipe_name (as in "
                     "TorchTitan: float8 all-gather is tensorwise scaling's, "
                     "with recipe_name unset)");
  if (llvm::is_contained(c.float8.filterFqns, "auto_filter_small_kn"))
    errors.push_back("quantize.linear.float8.filter_fqns: "
                     "'auto_filter_small_kn' (torchao's size-based filter) is "
                     "not implemented; name the linears to keep in high "
                     "precision");
  if (c.activationCheckpoint.mode == "memory_budget")
    errors.push_back("activation_checkpoint.mode = \"memory_budget\" "
                     "(torch.compile's min-cut recompute under a memory "
                     "budget) is not implemented; use \"selective\" or "
                     "\"full\"");
  if (c.training.dtype != "float32")
    errors.push_back("training.dtype = \"" + c.training.dtype +
                     "\" (parameters, gradients and optimizer state all in "
                     "that type) is not implemented yet: the runtime keeps "
                     "fp32 master weights; use "
                     "training.mixed_precision_param = \"bfloat16\" for bf16 "
                     "compute");
  bool offload = offloadsState(c, target);
  if (offload && c.parallelism.pipelineParallelDegree > 1)
    errors.push_back(
        "training.enable_cpu_offload with pipeline_parallel_degree > 1 is "
        "not implemented yet: the pipeline executor runs no host step; "
        "offload without pipeline parallelism, or use FSDP over more ranks");
  if (offload && !target::lookupHostTargetBackend())
    errors.push_back("training.enable_cpu_offload: no registered target runs "
                     "kernels on the host (the optimizer's)");
  return errors;
}

} // namespace

std::vector<std::string>
driver::configWarnings(const TrainConfig &c,
                       const target::TargetBackend &target) {
  std::vector<std::string> warnings;
  bool float8 = c.float8.enabled(c.model.converters);
  auto warn = [&](const llvm::Twine &msg) { warnings.push_back(msg.str()); };
  if (!float8 && !c.float8.recipeName.empty())
    warn("quantize.linear.float8.recipe_name = \"" + c.float8.recipeName +
         "\" has no effect without model.converters = "
         "[\"quantize.linear.float8\"] (as in TorchTitan)");
  if (float8 && c.float8.emulate && target.getFeatures().float8Gemms)
    warn("quantize.linear.float8.emulate: the " + target.getName().upper() +
         " target runs the float8 GEMMs on cuBLASLt (the CPU target is "
         "titan's emulation)");
  if (c.parallelism.enableAsyncTensorParallel &&
      c.parallelism.tensorParallelDegree == 1)
    warn("parallelism.enable_async_tensor_parallel: nothing to overlap "
         "without tensor parallelism (tensor_parallel_degree = 1)");
  else if (c.parallelism.enableAsyncTensorParallel && float8 &&
           !c.float8.recipeName.empty() && c.float8.recipeName != "tensorwise")
    warn("parallelism.enable_async_tensor_parallel: with Float8's " +
         c.float8.recipeName +
         " recipe only the tensor-parallel reduce-scatters are fused with "
         "their scaled GEMMs; the gathers move high precision (each row's "
         "scale comes from the gathered tensor, and the backward reads it) "
         "and run before their GEMMs (the numerics are the same)");
  if (c.training.enableCpuOffload && target.getFeatures().hostMemory)
    warn("training.enable_cpu_offload has nothing to do on the " +
         target.getName().upper() +
         " target: every buffer already is host memory");
  if (c.optimizer.earlyStepInBackward)
    warn("optimizer.early_step_in_backward: training.max_norm (" +
         formatNumber(c.training.maxNorm) +
         ") is ignored: each parameter's AdamW update runs in the backward "
         "once its gradient is final, before the global norm exists (as in "
         "TorchTitan, whose clip_grad_norm_ then finds no gradients); "
         "titan still reports the global gradient norm where TorchTitan "
         "logs 0");
  return warnings;
}

llvm::Error driver::diagnoseUnsupported(const TrainConfig &c,
                                        const target::TargetBackend &target) {
  std::vector<std::string> errors = unsupportedSettings(c, target);
  if (errors.empty())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::join(errors, "\n"));
}

llvm::Error driver::checkModelOnTarget(const LlamaArgs &model,
                                       const target::TargetBackend &target,
                                       int64_t contextParallelDegree) {
  const target::TargetFeatures &features = target.getFeatures();
  if (!model.documentMasked() ||
      (features.documentMaskedAttention &&
       (contextParallelDegree <= 1 || features.documentMaskedContextParallel)))
    return llvm::Error::success();
  std::string mask = "model " + model.name +
                     ": attn_mask_type = \"block_causal\" (TorchTitan's flex "
                     "or varlen attention within each packed document)";
  std::string where =
      " is not implemented on the " + target.getName().upper() + " target yet";
  if (!features.documentMaskedAttention)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   mask + where + "; the CPU target runs it");
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      mask + " with parallelism.context_parallel_degree = " +
          std::to_string(contextParallelDegree) + where +
          " (its context-parallel attention kernels take no document "
          "starts); the CPU target runs it");
}

llvm::Error driver::checkMeshSettings(const TrainConfig &c,
                                      const MeshDegrees &mesh) {
  std::vector<std::string> errors;
  if (c.optimizer.earlyStepInBackward && mesh.pp > 1)
    errors.push_back(llvm::formatv(
        "optimizer.early_step_in_backward is not supported with pipeline "
        "parallelism (parallelism.pipeline_parallel_degree = {0}), as in "
        "TorchTitan v0.2.0 (build_optimizers)",
        mesh.pp));
  if (int64_t steps = accumulationSteps(c, mesh);
      c.optimizer.earlyStepInBackward && steps > 1)
    errors.push_back(llvm::formatv(
        "optimizer.early_step_in_backward with gradient accumulation "
        "(training.global_batch_size = {0} is {1} microbatches of "
        "training.local_batch_size = {2} on {3} data-parallel rank{5}): a "
        "gradient is final only after the last microbatch, and TorchTitan's "
        "gradient hooks would step AdamW after every one; set "
        "training.global_batch_size = {4} or turn it off",
        c.training.globalBatchSize, steps, c.training.localBatchSize,
        mesh.dpReplicate * mesh.dpShard,
        c.training.localBatchSize * mesh.dpReplicate * mesh.dpShard,
        mesh.dpReplicate * mesh.dpShard == 1 ? "" : "s"));
  if (errors.empty())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::join(errors, "\n"));
}

llvm::Error driver::checkConfig(const TrainConfig &c,
                                const target::TargetBackend &target,
                                const WarningHandler &warn) {
  if (warn)
    for (const std::string &warning : configWarnings(c, target))
      warn(warning);
  return diagnoseUnsupported(c, target);
}

llvm::Error driver::checkCudaTarget(llvm::StringRef arch) {
  std::string requested = arch.str();
  llvm::SmallVector<llvm::StringRef> built;
  llvm::StringRef(TITAN_CUDA_ARCHS_BUILT).split(built, ',', -1, false);
  if (built.empty())
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--target=cuda: this titan was built without the CUDA target (no "
        "nvcc and cuBLASLt at configure time, or -DTITAN_ENABLE_CUDA=OFF)");
  if (!arch.consume_front("sm_") || !llvm::is_contained(built, arch))
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "--cuda-arch=" + requested + ": libtitanrt_cuda has code for sm_" +
            llvm::join(built, ", sm_") +
            " only; rebuild it with -DTITAN_CUDA_ARCHS=\"" +
            llvm::join(built, ";") + ";<arch>\" (e.g. 100a)");
  return llvm::Error::success();
}

namespace {
/// cuBLASLt's FP8 rule: dimensions a multiple of 16.
constexpr int64_t kFloat8Multiple = 16;

/// The keys the local token count is made of, with their values.
std::string tokenKeys(const TrainConfig &c, int64_t tokens) {
  const auto &p = c.parallelism;
  bool pipelined = p.pipelineParallelDegree > 1;
  int64_t batch =
      pipelined ? p.pipelineParallelMicrobatchSize : c.training.localBatchSize;
  std::string text =
      llvm::formatv("{0} ({1}) x training.seq_len ({2})",
                    pipelined ? "parallelism.pipeline_parallel_microbatch_size"
                              : "training.local_batch_size",
                    batch, c.training.seqLen);
  int64_t split = tokens > 0 ? batch * c.training.seqLen / tokens : 1;
  if (split > 1)
    text +=
        llvm::formatv(" / {0} (the sequence's split over "
                      "parallelism.context_parallel_degree ({1}) and "
                      "sequence-parallel "
                      "parallelism.tensor_parallel_degree ({2}))",
                      split, p.contextParallelDegree, p.tensorParallelDegree);
  return text;
}
} // namespace

llvm::Error driver::checkCudaFloat8Shapes(mlir::ModuleOp module,
                                          const TrainConfig &c) {
  std::vector<std::string> errors;
  auto add = [&](const auto &message) {
    std::string error = message.str();
    if (!llvm::is_contained(errors, error))
      errors.push_back(std::move(error));
  };
  module.walk([&](Float8LinearOp op) {
    llvm::ArrayRef<int64_t> w = op.getWeight().getType().getShape();
    int64_t n = w[0], k = w[1];
    if (n % kFloat8Multiple != 0 || k % kFloat8Multiple != 0)
      add(llvm::formatv(
          "float8 linear '{0}': its weight on each rank is {1} x {2} "
          "(parallelism.tensor_parallel_degree = {3}), but cuBLASLt's FP8 "
          "GEMMs (--target=cuda) need both dimensions to be multiples of "
          "{4}; choose a tensor_parallel_degree that keeps them so, or name "
          "the linear in quantize.linear.float8.filter_fqns",
          getModuleName(op.getLoc()).value_or("<unnamed>"), n, k,
          c.parallelism.tensorParallelDegree, kFloat8Multiple));
    // torch._scaled_mm refuses rowwise scales with another output type
    // too; cuBLASLt's outer-vector scaling is only known to run into bf16.
    // The CUDA target computes in bf16 unless the key says otherwise.
    std::string param = c.training.mixedPrecisionParam.value_or("bfloat16");
    if (op.getRecipe() != Float8Recipe::Tensorwise && param != "bfloat16")
      add(llvm::formatv(
          "quantize.linear.float8.recipe_name = \"{0}\": rowwise-scaled "
          "FP8 GEMMs (--target=cuda) write bf16, but "
          "training.mixed_precision_param = \"{1}\"; set it to "
          "\"bfloat16\"",
          c.float8.recipeName, param));
    int64_t tokens =
        mlir::cast<mlir::ShapedType>(op.getInput().getType()).getNumElements() /
        k;
    if (tokens % kFloat8Multiple != 0 &&
        op.getRecipe() != Float8Recipe::RowwiseWithGwHp)
      add(llvm::formatv(
          "the float8 linears' weight gradients reduce over each rank's {0} "
          "tokens = {1}, but cuBLASLt's FP8 GEMMs (--target=cuda) need a "
          "multiple of {2}; choose those keys so that it is one",
          tokens, tokenKeys(c, tokens), kFloat8Multiple));
  });
  if (errors.empty())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::join(errors, "\n"));
}
