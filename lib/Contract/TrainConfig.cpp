//===- TrainConfig.cpp - TorchTitan-style training configuration ----------===//
//
// One schema table binds each "section.key" to a TrainConfig field, its
// documentation and its allowed values. The TOML reader, the command-line
// overrides, the validator and the printer all walk that table, so a key is
// declared exactly once.
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/TrainConfig.h"
#include "titan/Support/Format.h"
#include "titan/Support/Suggest.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

// titan builds without C++ exceptions (as LLVM does): toml++ then reports
// parse errors through toml::parse_result.
#define TOML_EXCEPTIONS 0
#include <toml++/toml.h>

#include "titan/Contract/TomlParse.h"

#include <cmath>
#include <limits>
#include <variant>

using namespace titan;
using llvm::StringRef;

namespace {

using StringLists = std::vector<std::vector<std::string>>;
using FieldRef = std::variant<bool *, int64_t *, double *, std::string *,
                              std::vector<std::string> *,
                              std::optional<int64_t> *, std::optional<double> *,
                              std::optional<std::string> *, StringLists *>;

/// A numeric interval [lo, hi] with optionally open ends, plus one extra
/// allowed sentinel (TorchTitan's -1 = "derive it").
struct Range {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  bool loOpen = false, hiOpen = false;
  std::optional<int64_t> sentinel;
  StringRef sentinelMeaning;

  bool contains(double v) const {
    if (sentinel && v == static_cast<double>(*sentinel))
      return true;
    bool aboveLo = loOpen ? v > lo : v >= lo;
    bool belowHi = hiOpen ? v < hi : v <= hi;
    return aboveLo && belowHi;
  }
  std::string describe() const {
    std::string s;
    bool hasLo = std::isfinite(lo), hasHi = std::isfinite(hi);
    if (hasLo && hasHi)
      s = llvm::formatv("in {0}{1}, {2}{3}", loOpen ? "(" : "[",
                        formatNumber(lo), formatNumber(hi), hiOpen ? ")" : "]");
    else if (hasLo)
      s = llvm::formatv("{0} {1}", loOpen ? ">" : ">=", formatNumber(lo));
    else if (hasHi)
      s = llvm::formatv("{0} {1}", hiOpen ? "<" : "<=", formatNumber(hi));
    if (sentinel)
      s += llvm::formatv(" (or {0} for {1})", *sentinel, sentinelMeaning);
    return s;
  }
};

struct KeySpec {
  StringRef section, key;
  FieldRef field;
  StringRef help;
  std::vector<StringRef> choices; ///< for strings and list elements
  bool allowEmpty = true;         ///< strings with choices: "" = unset
  std::optional<Range> range;     ///< for numbers
  KeyGroup group = KeyGroup::Implemented;
  /// Values of a list key that titan refuses (TorchTitan knows them), and
  /// why.
  std::vector<StringRef> refusedChoices;
  StringRef refusedChoicesWhy;
  /// Choices match in any case (as TorchTitan's schedule lookup does).
  bool anyCase = false;

  std::string fullName() const { return (section + "." + key).str(); }

  /// A key that means nothing for a compiler; `help` says why.
  KeySpec &noMeaning() {
    group = KeyGroup::NoMeaning;
    return *this;
  }
  /// A key titan accepts only at TorchTitan's default; `help` says why.
  KeySpec &refused() {
    group = KeyGroup::Refused;
    return *this;
  }
  KeySpec &refuseChoices(std::initializer_list<StringRef> values,
                         StringRef why) {
    refusedChoices.assign(values);
    refusedChoicesWhy = why;
    return *this;
  }

  KeySpec &oneOf(std::initializer_list<StringRef> values, bool empty = false) {
    choices.assign(values);
    allowEmpty = empty;
    return *this;
  }
  KeySpec &inAnyCase() {
    anyCase = true;
    return *this;
  }
  KeySpec &atLeast(double lo) {
    range = Range{};
    range->lo = lo;
    return *this;
  }
  KeySpec &positive() {
    range = Range{};
    range->lo = 0;
    range->loOpen = true;
    return *this;
  }
  KeySpec &interval(double lo, double hi, bool hiOpen = false) {
    range = Range{};
    range->lo = lo;
    range->hi = hi;
    range->hiOpen = hiOpen;
    return *this;
  }
  KeySpec &orSentinel(int64_t value, StringRef meaning) {
    range->sentinel = value;
    range->sentinelMeaning = meaning;
    return *this;
  }
};

const char *const kSections[] = {"job",
                                 "model",
                                 "training",
                                 "optimizer",
                                 "lr_scheduler",
                                 "parallelism",
                                 "activation_checkpoint",
                                 "compile",
                                 "quantize.linear.float8",
                                 "quantize.linear.mx",
                                 "quantize.grouped_mm.float8",
                                 "quantize.grouped_mm.mx",
                                 "checkpoint",
                                 "metrics",
                                 "profiling",
                                 "comm",
                                 "memory_estimation",
                                 "fault_tolerance",
                                 "experimental",
                                 "validation",
                                 "debug"};

/// Other names of keys: older titan's and newer TorchTitan's (v0.2.1 moved
/// seed and deterministic back to [debug]). They set the same field.
const std::pair<StringRef, StringRef> kAliases[] = {
    {"job.print_args", "job.print_config"},
    {"debug.seed", "training.seed"},
    {"debug.deterministic", "training.deterministic"},
    {"debug.moe_force_load_balance", "training.debug_moe_force_load_balance"},
    {"compile.enable_async_tensor_parallel",
     "parallelism.enable_async_tensor_parallel"},
};

/// Keys of other TorchTitan versions that edit distance would not map, with
/// what to write today and where the spelling comes from (checked in
/// TorchTitan's history: v0.1.0's config_manager.py; enable_float8_linear
/// went in #823, Feb 2025, before v0.1.0).
struct ForeignKey {
  StringRef key, current, origin;
};
const ForeignKey kForeignKeys[] = {
    {"float8.enable_float8_linear", "--model.converters quantize.linear.float8",
     "TorchTitan's key before v0.1.0"},
    {"training.compile", "--compile.enable", "TorchTitan v0.1.0's key"},
    {"checkpoint.enable_checkpoint", "--checkpoint.enable",
     "TorchTitan v0.1.0's key"},
    {"checkpoint.initial_load_model_weights_only",
     "--checkpoint.initial_load_model_only", "TorchTitan v0.1.0's key"},
    {"checkpoint.last_save_model_weights_only",
     "--checkpoint.last_save_model_only", "TorchTitan v0.1.0's key"},
    {"lr_scheduler.lr_min", "--lr_scheduler.min_lr_factor",
     "TorchTitan v0.1.0's key"},
    {"parallelism.pipeline_parallel_split_points",
     "--parallelism.pipeline_parallel_layers_per_stage",
     "TorchTitan v0.1.0's key"},
};

/// Sections of other versions and what they are called today: [float8]
/// and [mx] are TorchTitan v0.1.0's; no TorchTitan release has
/// [quantize.dense.mx] or [quantize.moe.*] (v0.2.0 calls MoE GEMMs
/// grouped_mm). [quantize.dense.float8] is accepted (kDenseFloat8).
struct ForeignSection {
  StringRef section, current, origin;
};
const ForeignSection kForeignSections[] = {
    {"float8", "quantize.linear.float8", "TorchTitan v0.1.0's section"},
    {"mx", "quantize.linear.mx", "TorchTitan v0.1.0's section"},
    {"quantize.dense.mx", "quantize.linear.mx", "not a TorchTitan section"},
    {"quantize.moe.float8", "quantize.grouped_mm.float8",
     "not a TorchTitan section"},
    {"quantize.moe.mx", "quantize.grouped_mm.mx", "not a TorchTitan section"},
};

/// Spellings no TorchTitan release has that titan's seed commands use
/// (--quantize.dense.float8.enable): accepted, each with a note naming
/// TorchTitan v0.2.0's key. [quantize.dense.float8]'s other keys are
/// [quantize.linear.float8]'s; its `enable` means the Float8 converter.
const StringRef kDenseFloat8 = "quantize.dense.float8";
const StringRef kDenseFloat8Enable = "quantize.dense.float8.enable";

/// Values other spellings of a choice stand for: (key, spelling, value).
/// TorchTitan looks schedules up case-insensitively (get_schedule_class);
/// interleave_1f1b is the seed's spelling of Interleaved1F1B.
struct ValueSpelling {
  StringRef key, spelling, value;
};
const ValueSpelling kValueSpellings[] = {
    {"parallelism.pipeline_parallel_schedule", "interleave_1f1b",
     "Interleaved1F1B"},
};

/// The schema, bound to the fields of `c`.
std::vector<KeySpec> buildSchema(TrainConfig &c) {
  std::vector<KeySpec> s;
  auto add = [&](StringRef section, StringRef key, FieldRef field,
                 StringRef help) -> KeySpec & {
    s.push_back(KeySpec{section,
                        key,
                        field,
                        help,
                        {},
                        true,
                        std::nullopt,
                        KeyGroup::Implemented,
                        {},
                        ""});
    return s.back();
  };
  add("job", "config_file", &c.job.configFile, "Job config file (TOML)");
  add("job", "dump_folder", &c.job.dumpFolder, "Folder for job outputs");
  add("job", "description", &c.job.description, "Description of the job");
  add("job", "print_config", &c.job.printConfig,
      "Print the resolved config (alias: job.print_args)");
  add("job", "custom_config_module", &c.job.customConfigModule,
      "A Python module extending JobConfig; titan's keys are fixed")
      .refused();

  add("model", "name", &c.model.name, "Model family").oneOf({"llama3"});
  add("model", "flavor", &c.model.flavor,
      "The model: a built-in flavor (models/<name>/<flavor>.toml), a model "
      "TOML path, or a Hugging Face config.json (or its folder)");
  add("model", "hf_assets_path", &c.model.hfAssetsPath,
      "Folder of the Hugging Face assets: the tokenizer and, for HF "
      "checkpoints, config.json (model.flavor names the model); need not "
      "exist at compile time");
  add("model", "tokenizer_path", &c.model.tokenizerPath,
      "Deprecated (TorchTitan): the tokenizer's folder or file; "
      "model.hf_assets_path is the current key");
  add("model", "converters", &c.model.converters, "Model converters to apply")
      .oneOf({"float8", "quantize.linear.float8"})
      .refuseChoices({"mx", "quantize.linear.mx", "quantize.grouped_mm.float8",
                      "quantize.grouped_mm.mx"},
                     "titan has no MX (microscaling) kernels, and grouped "
                     "GEMMs exist only in MoE models (Llama 3 is dense)");
  add("model", "print_after_conversion", &c.model.printAfterConversion,
      "Print the nn.Module after converters (no Python module; "
      "--emit=titan shows the converted model)")
      .noMeaning();

  add("training", "local_batch_size", &c.training.localBatchSize,
      "Per-rank batch size (sequences)")
      .atLeast(1);
  add("training", "global_batch_size", &c.training.globalBatchSize,
      "Global batch size; above local x dp it accumulates gradients")
      .atLeast(1)
      .orSentinel(-1, "local_batch_size x data-parallel degree");
  add("training", "seq_len", &c.training.seqLen, "Sequence length").atLeast(1);
  add("training", "max_norm", &c.training.maxNorm,
      "Max global gradient norm for clipping")
      .positive();
  add("training", "steps", &c.training.steps, "Training steps").atLeast(1);
  add("training", "dataset", &c.training.dataset, "Dataset name");
  add("training", "dataset_path", &c.training.datasetPath,
      "Token file (.bin of uint32), JSON lines (.json/.jsonl, \"text\"), "
      "text lines, or a folder of them");
  add("training", "dtype", &c.training.dtype, "Parameter dtype")
      .oneOf({"float32", "bfloat16"});
  add("training", "mixed_precision_param", &c.training.mixedPrecisionParam,
      "Compute dtype of parameters (bf16 copies of the fp32 master weights, "
      "cast before FSDP's all-gather); unset: the target's default, float32 "
      "on the CPU, bfloat16 on CUDA (TorchTitan's)")
      .oneOf({"bfloat16", "float32"});
  add("training", "mixed_precision_reduce", &c.training.mixedPrecisionReduce,
      "Dtype of gradient reductions")
      .oneOf({"float32"});

  add("training", "enable_cpu_offload", &c.training.enableCpuOffload,
      "FSDP2's CPUOffloadPolicy: on a GPU the sharded parameters, "
      "gradients and optimizer state live in pinned host memory and AdamW "
      "runs on the host (kernel-offload-state); nothing to do on the CPU "
      "target (a warning)");
  add("training", "gc_freq", &c.training.gcFreq,
      "Python garbage collection interval (no Python at run time)")
      .noMeaning();
  add("training", "gc_debug", &c.training.gcDebug,
      "Python garbage collection debugging (no Python at run time)")
      .noMeaning();
  add("training", "seed", &c.training.seed, "Base RNG seed (alias: debug.seed)")
      .atLeast(0);
  add("training", "deterministic", &c.training.deterministic,
      "Deterministic algorithms only (alias: debug.deterministic)");
  add("training", "debug_moe_force_load_balance",
      &c.training.debugMoeForceLoadBalance,
      "Balance MoE routing for debugging (Llama 3 has no MoE layers)")
      .noMeaning();

  add("optimizer", "name", &c.optimizer.name, "Optimizer").oneOf({"AdamW"});
  add("optimizer", "lr", &c.optimizer.lr, "Peak learning rate").positive();
  add("optimizer", "beta1", &c.optimizer.beta1, "AdamW beta1")
      .interval(0, 1, /*hiOpen=*/true);
  add("optimizer", "beta2", &c.optimizer.beta2, "AdamW beta2")
      .interval(0, 1, /*hiOpen=*/true);
  add("optimizer", "eps", &c.optimizer.eps, "AdamW epsilon").atLeast(0);
  add("optimizer", "weight_decay", &c.optimizer.weightDecay,
      "Decoupled weight decay")
      .atLeast(0);

  add("optimizer", "implementation", &c.optimizer.implementation,
      "AdamW implementation (titan's is always fused: generated kernels, "
      "one launch a model unit)")
      .oneOf({"for-loop", "foreach", "fused"});
  add("optimizer", "early_step_in_backward", &c.optimizer.earlyStepInBackward,
      "Each parameter's AdamW update runs in the backward once its gradient "
      "is final, and its gradient buffer is reused; no clipping "
      "(training.max_norm is ignored, as in TorchTitan); refused with "
      "pipeline parallelism or gradient accumulation");

  add("lr_scheduler", "warmup_steps", &c.lrScheduler.warmupSteps,
      "Linear warmup steps")
      .atLeast(0);
  add("lr_scheduler", "decay_ratio", &c.lrScheduler.decayRatio,
      "Fraction of steps spent decaying (unset: decay after warmup)")
      .interval(0, 1);
  add("lr_scheduler", "decay_type", &c.lrScheduler.decayType, "Decay shape")
      .oneOf({"linear", "sqrt", "cosine"});
  add("lr_scheduler", "min_lr_factor", &c.lrScheduler.minLrFactor,
      "Final learning rate as a fraction of optimizer.lr")
      .interval(0, 1);

  auto &p = c.parallelism;
  add("parallelism", "data_parallel_replicate_degree",
      &p.dataParallelReplicateDegree, "DDP/HSDP replica groups")
      .atLeast(1);
  add("parallelism", "data_parallel_shard_degree", &p.dataParallelShardDegree,
      "FSDP shard degree")
      .atLeast(1)
      .orSentinel(-1, "the remaining ranks");
  add("parallelism", "fsdp_reshard_after_forward", &p.fsdpReshardAfterForward,
      "Free gathered parameters after forward")
      .oneOf({"default", "always", "never"});
  add("parallelism", "tensor_parallel_degree", &p.tensorParallelDegree,
      "Tensor (+ sequence) parallel degree")
      .atLeast(1);
  add("parallelism", "enable_async_tensor_parallel",
      &p.enableAsyncTensorParallel, "Overlap TP collectives with GEMMs");
  add("parallelism", "disable_loss_parallel", &p.disableLossParallel,
      "Gather the logits instead of a vocab-parallel loss");
  add("parallelism", "pipeline_parallel_degree", &p.pipelineParallelDegree,
      "Pipeline stages (ranks)")
      .atLeast(1);
  add("parallelism", "pipeline_parallel_schedule", &p.pipelineParallelSchedule,
      "Pipeline schedule (any case, as TorchTitan looks it up)")
      .oneOf({"GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS",
              "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV",
              "PipelineScheduleSingle", "PipelineScheduleMulti",
              "_PipelineScheduleRuntime"})
      .inAnyCase();
  add("parallelism", "pipeline_parallel_schedule_csv",
      &p.pipelineParallelScheduleCsv,
      "A file of each pipeline rank's actions (TorchTitan's CSV format, "
      "e.g. 0F0,0F1,0B0,...), run instead of the named schedule, whose "
      "stage layout it keeps (PipelineScheduleSingle: one stage per rank; "
      "PipelineScheduleMulti: several)");
  add("parallelism", "pipeline_parallel_microbatch_size",
      &p.pipelineParallelMicrobatchSize, "Pipeline microbatch size")
      .atLeast(1);
  add("parallelism", "pipeline_parallel_layers_per_stage",
      &p.pipelineParallelLayersPerStage, "Layers per (virtual) stage")
      .atLeast(1);
  add("parallelism", "pipeline_parallel_first_stage_less_layers",
      &p.pipelineParallelFirstStageLessLayers,
      "Layers the embedding counts as when stages are split")
      .atLeast(0);
  add("parallelism", "pipeline_parallel_last_stage_less_layers",
      &p.pipelineParallelLastStageLessLayers,
      "Layers the final norm and output count as when stages are split")
      .atLeast(0);
  add("parallelism", "context_parallel_degree", &p.contextParallelDegree,
      "Context (sequence) parallel degree")
      .atLeast(1);
  add("parallelism", "context_parallel_rotate_method",
      &p.contextParallelRotateMethod, "KV exchange in ring attention")
      .oneOf({"allgather", "alltoall"});
  add("parallelism", "enable_compiled_autograd", &p.enableCompiledAutograd,
      "torch.compile of the autograd graph (titan compiles the backward "
      "ahead of time)")
      .noMeaning();
  add("parallelism", "module_fqns_per_model_part", &p.moduleFqnsPerModelPart,
      "Stage split by module names; titan splits by layer counts "
      "(pipeline_parallel_layers_per_stage)")
      .refused();
  add("parallelism", "expert_parallel_degree", &p.expertParallelDegree,
      "Expert parallelism needs MoE layers (Llama 3 is dense)")
      .refused();
  add("parallelism", "expert_tensor_parallel_degree",
      &p.expertTensorParallelDegree,
      "Expert tensor parallelism needs MoE layers (Llama 3 is dense)")
      .refused();

  add("activation_checkpoint", "mode", &c.activationCheckpoint.mode,
      "Activation checkpointing")
      .oneOf({"none", "selective", "full", "memory_budget"});
  add("activation_checkpoint", "selective_ac_option",
      &c.activationCheckpoint.selectiveAcOption,
      "\"op\" (per-op) or N (every Nth layer)");
  add("activation_checkpoint", "per_op_sac_force_recompute_mm_shapes_by_fqns",
      &c.activationCheckpoint.perOpSacForceRecomputeMmShapesByFqns,
      "Modules whose linears' weight shapes per-op checkpointing recomputes");
  add("activation_checkpoint", "early_stop", &c.activationCheckpoint.earlyStop,
      "Stop recomputing once the backward has what it needs (titan always "
      "recomputes only what the backward reads)");
  add("activation_checkpoint", "memory_budget",
      &c.activationCheckpoint.memoryBudget,
      "With mode memory_budget: the activation memory budget (0..1)");
  add("activation_checkpoint", "visualize_memory_budget_pareto",
      &c.activationCheckpoint.visualizeMemoryBudgetPareto,
      "With mode memory_budget: dump the memory/recompute Pareto front");

  add("compile", "enable", &c.compile.enable, "Fuse into compiled kernels");
  add("compile", "components", &c.compile.components, "What to compile")
      .oneOf({"model", "loss"});
  add("compile", "backend", &c.compile.backend,
      "torch.compile backend (titan is the compiler)")
      .noMeaning();

  add("quantize.linear.float8", "recipe_name", &c.float8.recipeName,
      "Float8 scaling recipe")
      .oneOf({"tensorwise", "rowwise", "rowwise_with_gw_hp"},
             /*empty=*/true);
  add("quantize.linear.float8", "enable_fsdp_float8_all_gather",
      &c.float8.enableFsdpFloat8AllGather, "All-gather weights in float8");
  add("quantize.linear.float8", "precompute_float8_dynamic_scale_for_fsdp",
      &c.float8.precomputeFloat8DynamicScaleForFsdp,
      "One fused amax reduction for all FSDP float8 weights (titan "
      "always does it: the same scales)");
  add("quantize.linear.float8", "filter_fqns", &c.float8.filterFqns,
      "Linear layers kept in high precision");
  add("quantize.linear.float8", "emulate", &c.float8.emulate,
      "Emulate the float8 GEMMs (the CPU target always does)");

  auto &q = c.otherQuantize;
  StringRef mxWhy = "Read only by the MX converter, which titan refuses";
  add("quantize.linear.mx", "mxfp8_dim1_cast_kernel_choice",
      &q.mxLinearDim1CastKernelChoice, mxWhy)
      .noMeaning();
  add("quantize.linear.mx", "recipe_name", &q.mxLinearRecipeName, mxWhy)
      .noMeaning();
  add("quantize.linear.mx", "filter_fqns", &q.mxLinearFilterFqns, mxWhy)
      .noMeaning();
  StringRef groupedWhy =
      "Read only by the grouped-GEMM converters of MoE models, which titan "
      "refuses";
  add("quantize.grouped_mm.float8", "fqns", &q.float8GroupedMmFqns, groupedWhy)
      .noMeaning();
  add("quantize.grouped_mm.mx", "recipe_name", &q.mxGroupedMmRecipeName,
      groupedWhy)
      .noMeaning();
  add("quantize.grouped_mm.mx", "fqns", &q.mxGroupedMmFqns, groupedWhy)
      .noMeaning();

  add("checkpoint", "enable", &c.checkpoint.enable, "Save checkpoints");
  add("checkpoint", "folder", &c.checkpoint.folder,
      "Checkpoint folder under job.dump_folder (an absolute path stands "
      "alone)");
  add("checkpoint", "interval", &c.checkpoint.interval,
      "Steps between checkpoints")
      .atLeast(1);
  add("checkpoint", "initial_load_path", &c.checkpoint.initialLoadPath,
      "Weights to start from");
  add("checkpoint", "initial_load_model_only",
      &c.checkpoint.initialLoadModelOnly,
      "initial_load_path gives the weights only (false: the whole training "
      "state of a checkpoint)");
  add("checkpoint", "initial_load_in_hf", &c.checkpoint.initialLoadInHf,
      "initial_load_path uses Hugging Face names");
  add("checkpoint", "last_save_in_hf", &c.checkpoint.lastSaveInHf,
      "Save the final weights with Hugging Face names");
  add("checkpoint", "last_save_model_only", &c.checkpoint.lastSaveModelOnly,
      "Final save holds the model only");
  add("checkpoint", "export_dtype", &c.checkpoint.exportDtype,
      "Dtype of the final model-only save")
      .oneOf({"float16", "bfloat16", "float32"});
  add("checkpoint", "keep_latest_k", &c.checkpoint.keepLatestK,
      "Checkpoints kept (0 = all)")
      .atLeast(0);
  add("checkpoint", "exclude_from_loading", &c.checkpoint.excludeFromLoading,
      "Checkpoint parts not to load")
      .oneOf(
          {"model", "optimizer", "lr_scheduler", "dataloader", "train_state"});
  add("checkpoint", "enable_first_step_checkpoint",
      &c.checkpoint.enableFirstStepCheckpoint,
      "Also save after the first step");
  add("checkpoint", "async_mode", &c.checkpoint.asyncMode,
      "Background saves: the save step copies the state to host staging "
      "(page-locked on CUDA with async_with_pinned_mem), a thread writes "
      "it, and it is committed at a step end once every rank has written; "
      "the last step's save stays synchronous")
      .oneOf({"disabled", "async", "async_with_pinned_mem"});
  add("checkpoint", "load_step", &c.checkpoint.loadStep,
      "Step to resume from (with checkpoint.enable, -1 is the latest)")
      .atLeast(0)
      .orSentinel(-1, "the latest");
  add("checkpoint", "enable_ft_dataloader_checkpoints",
      &c.checkpoint.enableFtDataloaderCheckpoints,
      "Per-replica data loader checkpoints of fault tolerance, which titan "
      "refuses")
      .noMeaning();
  add("checkpoint", "initial_load_in_hf_quantized",
      &c.checkpoint.initialLoadInHfQuantized,
      "Quantized HF checkpoints; titan loads float weights")
      .refused();
  add("checkpoint", "create_seed_checkpoint",
      &c.checkpoint.createSeedCheckpoint,
      "Save the initialized model as step 0 and stop (any layout: titan's "
      "initialization is the same for every one)");
  add("checkpoint", "load_only", &c.checkpoint.loadOnly,
      "Load checkpoints but never save");

  add("metrics", "log_freq", &c.metrics.logFreq, "Steps between log lines")
      .atLeast(1);
  add("metrics", "enable_tensorboard", &c.metrics.enableTensorboard,
      "Write TensorBoard events");
  add("metrics", "enable_wandb", &c.metrics.enableWandb,
      "Weights & Biases logging; titan writes TensorBoard events "
      "(metrics.enable_tensorboard)")
      .refused();
  add("metrics", "save_tb_folder", &c.metrics.saveTbFolder,
      "TensorBoard folder under job.dump_folder");
  add("metrics", "save_for_all_ranks", &c.metrics.saveForAllRanks,
      "TensorBoard events from every rank (one folder per rank)");
  add("metrics", "disable_color_printing", &c.metrics.disableColorPrinting,
      "Plain progress lines");
  add("metrics", "peak_tflops", &c.metrics.peakTflops,
      "Peak TFLOP/s of one rank's hardware, for MFU (0: not reported)")
      .atLeast(0);

  add("profiling", "enable_profiling", &c.profiling.enableProfiling,
      "Write a Chrome/Perfetto trace per rank of the last profiler_active "
      "steps of every profile_freq steps");
  add("profiling", "save_traces_folder", &c.profiling.saveTracesFolder,
      "Trace folder under job.dump_folder "
      "(iteration_<step>/rank<r>_trace.json)");
  add("profiling", "profile_freq", &c.profiling.profileFreq,
      "Steps per profiler cycle (its last profiler_active steps are "
      "traced)")
      .atLeast(1);
  add("profiling", "profiler_active", &c.profiling.profilerActive,
      "Consecutive steps traced into one file, at the end of every "
      "profile_freq steps")
      .atLeast(1);
  add("profiling", "profiler_warmup", &c.profiling.profilerWarmup,
      "Untraced steps before each traced window (torch.profiler's warm-up; "
      "profile_freq >= profiler_warmup + profiler_active)")
      .atLeast(0);
  add("profiling", "enable_memory_snapshot", &c.profiling.enableMemorySnapshot,
      "CUDA caching allocator snapshots; titan plans memory at compile time "
      "(memory_estimation.enable, --emit=memory)")
      .refused();
  add("profiling", "save_memory_snapshot_folder",
      &c.profiling.saveMemorySnapshotFolder,
      "Read only with profiling.enable_memory_snapshot, which titan refuses")
      .noMeaning();

  add("comm", "init_timeout_seconds", &c.comm.initTimeoutSeconds,
      "Seconds a collective may take during start-up and the first step "
      "before every rank is aborted")
      .atLeast(1);
  add("comm", "train_timeout_seconds", &c.comm.trainTimeoutSeconds,
      "Seconds a collective may take after the first step before every rank "
      "is aborted")
      .atLeast(1);
  add("comm", "trace_buf_size", &c.comm.traceBufSize,
      "Flight recorder: the last N collectives of each rank, dumped as JSON "
      "when a collective times out or the run fails (0: off)")
      .atLeast(0);
  add("comm", "save_traces_folder", &c.comm.saveTracesFolder,
      "Flight recorder dump folder under job.dump_folder");
  add("comm", "save_traces_file_prefix", &c.comm.saveTracesFilePrefix,
      "Flight recorder file name before the rank (<prefix><rank>)");

  add("memory_estimation", "enable", &c.memoryEstimation.enable,
      "Print the compiled memory plan (titan's is exact, not estimated)");
  add("memory_estimation", "disable_fake_mode",
      &c.memoryEstimation.disableFakeMode,
      "PyTorch's FakeTensorMode (titan's plan needs no tensors)")
      .noMeaning();

  auto &ft = c.faultTolerance;
  add("fault_tolerance", "enable", &ft.enable,
      "torchft replica groups that survive failures; titan's jobs restart "
      "from checkpoints")
      .refused();
  StringRef ftWhy =
      "Read only with fault_tolerance.enable, which titan refuses";
  add("fault_tolerance", "process_group", &ft.processGroup, ftWhy).noMeaning();
  add("fault_tolerance", "process_group_timeout_ms", &ft.processGroupTimeoutMs,
      ftWhy)
      .noMeaning();
  add("fault_tolerance", "replica_id", &ft.replicaId, ftWhy).noMeaning();
  add("fault_tolerance", "group_size", &ft.groupSize, ftWhy).noMeaning();
  add("fault_tolerance", "min_replica_size", &ft.minReplicaSize, ftWhy)
      .noMeaning();
  add("fault_tolerance", "semi_sync_method", &ft.semiSyncMethod, ftWhy)
      .noMeaning();

  add("experimental", "custom_import", &c.experimental.customImport,
      "A Python module to import (new models, components); titan compiles "
      "its built-in Llama 3")
      .refused();
  add("experimental", "custom_args_module", &c.experimental.customArgsModule,
      "A Python module extending JobConfig; titan's keys are fixed")
      .refused();

  auto &v = c.validation;
  add("validation", "enable", &v.enable,
      "Forward-only loss over the validation set every validation.freq "
      "steps");
  add("validation", "dataset", &v.dataset, "Validation dataset name");
  add("validation", "dataset_path", &v.datasetPath,
      "Validation data (as training.dataset_path)");
  add("validation", "local_batch_size", &v.localBatchSize,
      "Per-rank validation batch size")
      .atLeast(1);
  add("validation", "seq_len", &v.seqLen, "Validation sequence length")
      .atLeast(1);
  add("validation", "freq", &v.freq, "Steps between validations").atLeast(1);
  add("validation", "steps", &v.steps, "Validation batches per validation")
      .atLeast(1)
      .orSentinel(-1, "the whole validation set");

  add("debug", "no_cuda_graphs", &c.debug.noCudaGraphs,
      "CUDA target: launch each kernel of every step instead of capturing "
      "the steps once as CUDA graphs and replaying them (titan's own key)");
  add("debug", "no_comm_overlap", &c.debug.noCommOverlap,
      "Turn off the latency-hiding scheduler and the CPU communication "
      "progress thread: each collective is waited where it is issued");
  add("debug", "no_widen_gemm_results", &c.debug.noWidenGemmResults,
      "Round each weight gradient to bf16 before its cast to f32, as "
      "TorchTitan's eager FSDP2 does (its bits); by default the GEMM writes "
      "the f32 gradient itself, unrounded, as Megatron-LM's "
      "gradient-accumulation fusion does (titan's own key)");
  add("debug", "offload_state", &c.debug.offloadState,
      "Plan and run training.enable_cpu_offload's placement on any target: "
      "on the CPU target the offloaded state lives in a second host arena, "
      "reached through the same copies and host steps as on a GPU, which "
      "tests that path without one (titan's own key)");
  return s;
}

/// The kind of value a field holds: "integer", "list of strings", ...
StringRef valueKind(const FieldRef &f) {
  return std::visit(
      [](auto *p) -> StringRef {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<T, bool>)
          return "boolean";
        else if constexpr (std::is_same_v<T, int64_t> ||
                           std::is_same_v<T, std::optional<int64_t>>)
          return "integer";
        else if constexpr (std::is_same_v<T, double> ||
                           std::is_same_v<T, std::optional<double>>)
          return "number";
        else if constexpr (std::is_same_v<T, std::string> ||
                           std::is_same_v<T, std::optional<std::string>>)
          return "string";
        else if constexpr (std::is_same_v<T, StringLists>)
          return "list of lists of strings";
        else
          return "list of strings";
      },
      f);
}

/// "an integer", "a list of strings", ...
std::string typeName(const FieldRef &f) {
  StringRef kind = valueKind(f);
  return (StringRef("aeiou").contains(kind.front()) ? "an " : "a ") +
         kind.str();
}

std::string formatDouble(double v) {
  std::string s = formatNumber(v);
  // Keep floats recognizable as floats in TOML.
  if (s.find_first_of(".eEn") == std::string::npos)
    s += ".0";
  return s;
}

std::string quote(StringRef s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\')
      out += '\\';
    out += ch;
  }
  return out + "\"";
}

std::string formatList(const std::vector<std::string> &list) {
  std::vector<std::string> quoted;
  for (const std::string &s : list)
    quoted.push_back(quote(s));
  return "[" + llvm::join(quoted, ", ") + "]";
}

/// The value in `f` as TOML; empty when unset.
std::string formatValue(const FieldRef &f) {
  return std::visit(
      [](auto *p) -> std::string {
        using T = std::remove_pointer_t<decltype(p)>;
        if constexpr (std::is_same_v<T, bool>)
          return *p ? "true" : "false";
        else if constexpr (std::is_same_v<T, int64_t>)
          return std::to_string(*p);
        else if constexpr (std::is_same_v<T, double>)
          return formatDouble(*p);
        else if constexpr (std::is_same_v<T, std::string>)
          return quote(*p);
        else if constexpr (std::is_same_v<T, std::vector<std::string>>)
          return formatList(*p);
        else if constexpr (std::is_same_v<T, StringLists>) {
          std::vector<std::string> lists;
          for (const std::vector<std::string> &list : *p)
            lists.push_back(formatList(list));
          return p->empty() ? "" : "[" + llvm::join(lists, ", ") + "]";
        } else if constexpr (std::is_same_v<T, std::optional<int64_t>>)
          return *p ? std::to_string(**p) : "";
        else if constexpr (std::is_same_v<T, std::optional<std::string>>)
          return *p ? quote(**p) : "";
        else
          return *p ? formatDouble(**p) : "";
      },
      f);
}

/// The strings of a TOML array into `out`; false if one is not a string.
bool readStrings(const toml::array &arr, std::vector<std::string> &out) {
  out.clear();
  for (const toml::node &e : arr) {
    if (!e.is_string())
      return false;
    out.push_back(std::string(*e.value<std::string_view>()));
  }
  return true;
}

std::string location(StringRef path, const toml::source_region &region) {
  return llvm::formatv("{0}:{1}:{2}", path, region.begin.line,
                       region.begin.column);
}

class ConfigBuilder {
public:
  ConfigBuilder()
      : schema(buildSchema(config)), defaultSchema(buildSchema(defaults)) {}

  /// The key named `fullKey` or by one of its aliases or spellings.
  KeySpec *find(StringRef fullKey) {
    for (auto [alias, key] : kAliases)
      if (fullKey == alias)
        fullKey = key;
    if (fullKey == kDenseFloat8Enable)
      return &denseFloat8Enable;
    std::string respelt;
    if (fullKey.starts_with(kDenseFloat8) &&
        fullKey.drop_front(kDenseFloat8.size()).starts_with("."))
      fullKey = respelt =
          ("quantize.linear.float8" + fullKey.drop_front(kDenseFloat8.size()))
              .str();
    for (KeySpec &k : schema)
      if (k.fullName() == fullKey)
        return &k;
    return nullptr;
  }

  /// Notes a key written as the seed's spelling rather than TorchTitan's.
  void noteSpelling(StringRef written, const KeySpec &k) {
    if (!written.starts_with(kDenseFloat8))
      return;
    std::string meaning =
        &k == &denseFloat8Enable
            ? "model.converters = [\"quantize.linear.float8\"]"
            : k.fullName();
    addNote(written.str() + " is read as " + meaning +
            ", TorchTitan v0.2.0's key (no TorchTitan release has [" +
            kDenseFloat8.str() + "])");
  }
  void addNote(const std::string &note) {
    if (!llvm::is_contained(config.notes, note))
      config.notes.push_back(note);
  }

  /// A choice written in another case (TorchTitan's schedule lookup ignores
  /// case) or another spelling becomes the value it stands for.
  void canonicalizeChoice(KeySpec &k) {
    auto *value = std::get_if<std::string *>(&k.field);
    if (!value || k.choices.empty())
      return;
    std::string &v = **value;
    for (const ValueSpelling &spelling : kValueSpellings)
      if (spelling.key == k.fullName() &&
          spelling.spelling.equals_insensitive(v)) {
        addNote(k.fullName() + " '" + v + "' is read as '" +
                spelling.value.str() + "', TorchTitan v0.2.0's name");
        v = spelling.value.str();
        return;
      }
    if (k.anyCase)
      for (StringRef choice : k.choices)
        if (choice.equals_insensitive(v))
          v = choice.str();
  }
  KeySpec *find(StringRef section, StringRef key) {
    return find((section + "." + key).str());
  }

  /// "did you mean ..." for an unknown key, looking first in its own section,
  /// then for the same key name in other sections, then for a near full name.
  std::string suggestKey(StringRef section, StringRef key) {
    std::string full = (section + "." + key).str();
    for (const ForeignKey &foreign : kForeignKeys)
      if (full == foreign.key)
        return ("; did you mean '" + foreign.current + "'? ('" + full +
                "' is " + foreign.origin + ")")
            .str();
    for (const ForeignSection &foreign : kForeignSections)
      if (section == foreign.section && find(foreign.current, key))
        return ("; did you mean '" + foreign.current + "." + key + "'? ([" +
                section + "] is " + foreign.origin + ")")
            .str();
    std::vector<StringRef> sameSection;
    for (KeySpec &k : schema)
      if (k.section == section)
        sameSection.push_back(k.key);
    StringRef hit = closestMatch(key, sameSection);
    if (!hit.empty())
      return ("; did you mean '" + section + "." + hit + "'?").str();
    for (KeySpec &k : schema)
      if (k.key == key)
        return llvm::formatv("; did you mean '{0}'? ('{1}' belongs to [{2}])",
                             k.fullName(), key, k.section);
    if (isSection(section))
      return "";
    // A misspelt section: compare whole "section.key" names.
    std::vector<std::string> fullNames;
    for (KeySpec &k : schema)
      fullNames.push_back(k.fullName());
    std::vector<StringRef> refs(fullNames.begin(), fullNames.end());
    hit = closestMatch(full, refs);
    if (!hit.empty())
      return ("; did you mean '" + hit + "'?").str();
    return "";
  }

  std::string suggestSection(StringRef section) {
    for (const ForeignSection &foreign : kForeignSections) {
      StringRef name = foreign.section;
      if (name == section ||
          (name.starts_with(section) && name[section.size()] == '.'))
        return ("; [" + name + "] (" + foreign.origin + ") is [" +
                foreign.current + "] in TorchTitan v0.2.0")
            .str();
    }
    std::vector<StringRef> names(std::begin(kSections), std::end(kSections));
    StringRef hit = closestMatch(section, names);
    return hit.empty() ? "" : ("; did you mean [" + hit + "]?").str();
  }

  bool isSectionPrefix(StringRef path) {
    auto under = [&](StringRef s) {
      return s.starts_with(path) && s.size() > path.size() &&
             s[path.size()] == '.';
    };
    return llvm::any_of(kSections, under) || under(kDenseFloat8);
  }
  bool isSection(StringRef path) {
    return llvm::is_contained(kSections, path) || path == kDenseFloat8;
  }

  void error(const std::string &where, const std::string &msg) {
    errors.push_back(where.empty() ? msg : where + ": " + msg);
  }

  /// Checks enumerations and ranges of the value now in `k`'s field, and
  /// that a refused key keeps TorchTitan's default.
  void checkValue(KeySpec &k, const std::string &where) {
    if (&k == &denseFloat8Enable)
      return; // a boolean outside the schema: nothing to check
    std::string value = formatValue(k.field);
    std::string defaultValue =
        formatValue(defaultSchema[&k - schema.data()].field);
    if (k.group == KeyGroup::Refused && value != defaultValue) {
      error(where,
            llvm::formatv("{0} = {1} is not supported: {2} (only "
                          "TorchTitan's default, {3}, is accepted)",
                          k.fullName(), value, k.help,
                          defaultValue.empty() ? "unset" : defaultValue));
      return;
    }
    auto checkChoice = [&](const std::string &v) {
      if (llvm::is_contained(k.refusedChoices, v)) {
        error(where, llvm::formatv("{0}: '{1}' is not supported: {2}",
                                   k.fullName(), v, k.refusedChoicesWhy));
        return;
      }
      if (k.choices.empty() || (k.allowEmpty && v.empty()) ||
          llvm::is_contained(k.choices, v))
        return;
      std::string msg =
          llvm::formatv("{0}: '{1}' is not one of {2}", k.fullName(), v,
                        llvm::join(k.choices, ", "));
      StringRef hit = closestMatch(v, k.choices);
      if (!hit.empty())
        msg += ("; did you mean '" + hit + "'?").str();
      error(where, msg);
    };
    auto checkRange = [&](double v) {
      // inf and nan are valid TOML floats and parse from the command line,
      // but no setting of a training run means them.
      if (!std::isfinite(v)) {
        error(where, llvm::formatv("{0}: {1} is not a finite number",
                                   k.fullName(), formatNumber(v)));
        return;
      }
      if (!k.range || k.range->contains(v))
        return;
      error(where,
            llvm::formatv("{0}: {1} is out of range; must be {2}", k.fullName(),
                          formatNumber(v), k.range->describe()));
    };
    std::visit(
        [&](auto *p) {
          using T = std::remove_pointer_t<decltype(p)>;
          if constexpr (std::is_same_v<T, std::string>)
            checkChoice(*p);
          else if constexpr (std::is_same_v<T, std::optional<std::string>>) {
            if (*p)
              checkChoice(**p);
          } else if constexpr (std::is_same_v<T, std::vector<std::string>>)
            llvm::for_each(*p, checkChoice);
          else if constexpr (std::is_same_v<T, int64_t> ||
                             std::is_same_v<T, double>)
            checkRange(static_cast<double>(*p));
          else if constexpr (std::is_same_v<T, std::optional<int64_t>> ||
                             std::is_same_v<T, std::optional<double>>) {
            if (*p)
              checkRange(static_cast<double>(**p));
          }
        },
        k.field);
  }

  void wrongType(KeySpec &k, const std::string &where, StringRef got) {
    error(where, llvm::formatv("{0}: expected {1}, got {2}", k.fullName(),
                               typeName(k.field), got));
  }

  /// Sets `k` from a TOML node.
  void setFromToml(KeySpec &k, const toml::node &node,
                   const std::string &where) {
    auto describe = [](const toml::node &n) -> std::string {
      switch (n.type()) {
      case toml::node_type::string:
        return "a string (\"" + std::string(*n.value<std::string_view>()) +
               "\")";
      case toml::node_type::integer:
        return "an integer (" + std::to_string(*n.value<int64_t>()) + ")";
      case toml::node_type::floating_point:
        return "a number";
      case toml::node_type::boolean:
        return "a boolean";
      case toml::node_type::array:
        return "an array";
      case toml::node_type::table:
        return "a table";
      default:
        return "a date or time";
      }
    };
    bool ok = std::visit(
        [&](auto *p) -> bool {
          using T = std::remove_pointer_t<decltype(p)>;
          if constexpr (std::is_same_v<T, bool>) {
            if (!node.is_boolean())
              return false;
            *p = *node.value<bool>();
          } else if constexpr (std::is_same_v<T, int64_t> ||
                               std::is_same_v<T, std::optional<int64_t>>) {
            if (!node.is_integer())
              return false;
            *p = *node.value<int64_t>();
          } else if constexpr (std::is_same_v<T, double> ||
                               std::is_same_v<T, std::optional<double>>) {
            if (!node.is_number())
              return false;
            *p = *node.value<double>();
          } else if constexpr (std::is_same_v<T, std::string> ||
                               std::is_same_v<T, std::optional<std::string>>) {
            if (!node.is_string())
              return false;
            *p = std::string(*node.value<std::string_view>());
          } else if constexpr (std::is_same_v<T, StringLists>) {
            const toml::array *arr = node.as_array();
            if (!arr)
              return false;
            p->clear();
            for (const toml::node &e : *arr)
              if (!e.is_array() ||
                  !readStrings(*e.as_array(), p->emplace_back()))
                return false;
          } else {
            const toml::array *arr = node.as_array();
            if (!arr || !readStrings(*arr, *p))
              return false;
          }
          return true;
        },
        k.field);
    if (!ok)
      return wrongType(k, where, describe(node));
    canonicalizeChoice(k);
    checkValue(k, where);
  }

  /// Sets `k` from a command-line string.
  void setFromString(KeySpec &k, StringRef text, const std::string &where) {
    bool ok = std::visit(
        [&](auto *p) -> bool {
          using T = std::remove_pointer_t<decltype(p)>;
          if constexpr (std::is_same_v<T, bool>) {
            std::string lower = text.lower();
            if (lower == "true" || lower == "1")
              *p = true;
            else if (lower == "false" || lower == "0")
              *p = false;
            else
              return false;
          } else if constexpr (std::is_same_v<T, int64_t> ||
                               std::is_same_v<T, std::optional<int64_t>>) {
            int64_t v;
            if (text.trim().getAsInteger(10, v))
              return false;
            *p = v;
          } else if constexpr (std::is_same_v<T, double> ||
                               std::is_same_v<T, std::optional<double>>) {
            double v;
            if (text.trim().getAsDouble(v))
              return false;
            *p = v;
          } else if constexpr (std::is_same_v<T, std::string> ||
                               std::is_same_v<T, std::optional<std::string>>) {
            *p = text.str();
          } else if constexpr (std::is_same_v<T, StringLists>) {
            return false; // no command-line form; set it in the TOML file
          } else {
            // TorchTitan's CLI form: a comma-separated list.
            p->clear();
            llvm::SmallVector<StringRef> parts;
            text.split(parts, ',', -1, /*KeepEmpty=*/false);
            for (StringRef part : parts)
              p->push_back(part.trim().str());
          }
          return true;
        },
        k.field);
    if (!ok)
      return wrongType(k, where, ("'" + text + "'").str());
    canonicalizeChoice(k);
    checkValue(k, where);
  }

  void readToml(StringRef path) {
    if (!llvm::sys::fs::is_regular_file(path)) {
      error("job.config_file",
            "cannot read '" + path.str() + "': " +
                (llvm::sys::fs::exists(path) ? "not a regular file"
                                             : "no such file"));
      return;
    }
    handleParse(path, parseTomlFileChecked(path));
  }

  void readTomlText(StringRef text, StringRef sourceName) {
    handleParse(sourceName,
                parseTomlChecked(std::string_view(text.data(), text.size()),
                                 std::string_view(sourceName)));
  }

  void handleParse(StringRef path, toml::parse_result parsed) {
    if (!parsed) {
      const toml::parse_error &err = parsed.error();
      error(location(path, err.source()),
            "invalid TOML: " + std::string(err.description()));
      return;
    }
    readTable(path, parsed.table(), "");
  }

  /// Applies command-line overrides, then the cross-key checks.
  llvm::Expected<TrainConfig> finish(llvm::ArrayRef<ConfigOverride> overrides) {
    for (const ConfigOverride &o : overrides) {
      KeySpec *k = find(o.key);
      if (!k) {
        error("command line", "unknown option '--" + o.key + "'");
        continue;
      }
      noteSpelling(o.key, *k);
      setFromString(*k, o.value, "command line");
    }
    applyDenseFloat8Enable();
    if (errors.empty())
      checkConsistency();
    if (!errors.empty())
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     llvm::join(errors, "\n"));
    return std::move(config);
  }

  void readTable(StringRef path, const toml::table &table,
                 const std::string &prefix) {
    for (auto &&[name, node] : table) {
      std::string where = location(path, name.source());
      std::string key(name.str());
      if (const toml::table *sub = node.as_table()) {
        std::string sectionPath = prefix.empty() ? key : prefix + "." + key;
        if (isSection(sectionPath))
          readSection(path, sectionPath, *sub);
        else if (isSectionPrefix(sectionPath))
          readTable(path, *sub, sectionPath);
        else
          error(where, "unknown section [" + sectionPath + "]" +
                           suggestSection(sectionPath));
        continue;
      }
      if (prefix.empty()) {
        error(where,
              "key '" + key + "' must be inside a section such as [training]");
        continue;
      }
      error(where, "unknown section [" + prefix + "]" + suggestSection(prefix));
    }
  }

  void readSection(StringRef path, const std::string &section,
                   const toml::table &table) {
    for (auto &&[name, node] : table) {
      std::string where = location(path, node.source());
      std::string key(name.str());
      KeySpec *k = find(section, key);
      if (!k) {
        error(location(path, name.source()), "unknown key '" + section + "." +
                                                 key + "'" +
                                                 suggestKey(section, key));
        continue;
      }
      if (k->section == "job" && k->key == "config_file") {
        error(where, "job.config_file cannot be set inside a config file");
        continue;
      }
      noteSpelling(section + "." + key, *k);
      setFromToml(*k, node, where);
    }
  }

  /// Checks that involve more than one key.
  void checkConsistency() {
    const TrainConfig &c = config;
    if (c.training.globalBatchSize > 0 &&
        c.training.globalBatchSize % c.training.localBatchSize != 0)
      error("", llvm::formatv("training.global_batch_size ({0}) must be a "
                              "multiple of training.local_batch_size ({1})",
                              c.training.globalBatchSize,
                              c.training.localBatchSize));
    if (c.training.localBatchSize %
            c.parallelism.pipelineParallelMicrobatchSize !=
        0)
      error("", llvm::formatv(
                    "parallelism.pipeline_parallel_microbatch_size ({0}) must "
                    "divide training.local_batch_size ({1})",
                    c.parallelism.pipelineParallelMicrobatchSize,
                    c.training.localBatchSize));
    StringRef ac = c.activationCheckpoint.selectiveAcOption;
    unsigned every;
    if (c.activationCheckpoint.mode == "selective" && ac != "op" &&
        (ac.getAsInteger(10, every) || every == 0))
      error("", "activation_checkpoint.selective_ac_option: '" + ac.str() +
                    "' must be \"op\" or a positive integer N (checkpoint "
                    "every Nth layer)");
    StringRef schedule = c.parallelism.pipelineParallelSchedule;
    if (c.parallelism.pipelineParallelDegree > 1 &&
        c.parallelism.pipelineParallelScheduleCsv.empty() &&
        llvm::is_contained({"PipelineScheduleSingle", "PipelineScheduleMulti",
                            "_PipelineScheduleRuntime"},
                           schedule))
      error("", "parallelism.pipeline_parallel_schedule '" + schedule.str() +
                    "' runs the actions of "
                    "parallelism.pipeline_parallel_schedule_csv, which is "
                    "not set");
    // torchtitan/tools/profiling.py asserts wait = profile_freq - (active +
    // warmup) >= 0 for torch.profiler.schedule.
    if (c.profiling.enableProfiling &&
        c.profiling.profileFreq <
            c.profiling.profilerActive + c.profiling.profilerWarmup)
      error("",
            llvm::formatv("profiling.profile_freq ({0}) must be at least "
                          "profiling.profiler_warmup ({1}) + "
                          "profiling.profiler_active ({2})",
                          c.profiling.profileFreq, c.profiling.profilerWarmup,
                          c.profiling.profilerActive));
    if (c.checkpoint.keepLatestK == 1)
      error("", "checkpoint.keep_latest_k: 1 is not allowed (the newest "
                "checkpoint may still be being written); use 0 (keep all) "
                "or >= 2");
    if (c.checkpoint.lastSaveInHf && !c.checkpoint.lastSaveModelOnly)
      error("", "checkpoint.last_save_in_hf requires "
                "checkpoint.last_save_model_only = true (safetensors hold "
                "tensors only)");
  }

  /// quantize.dense.float8.enable (not a key of the schema: it sets
  /// model.converters).
  void applyDenseFloat8Enable() {
    if (denseFloat8EnableValue &&
        !config.float8.enabled(config.model.converters))
      config.model.converters.push_back("quantize.linear.float8");
  }

  TrainConfig config;
  std::vector<KeySpec> schema;
  bool denseFloat8EnableValue = false;
  KeySpec denseFloat8Enable{kDenseFloat8,
                            "enable",
                            &denseFloat8EnableValue,
                            "The Float8 converter (the seed's spelling)",
                            {},
                            true,
                            std::nullopt,
                            KeyGroup::Implemented,
                            {},
                            ""};
  /// TorchTitan's defaults, parallel to `schema`.
  TrainConfig defaults;
  std::vector<KeySpec> defaultSchema;
  std::vector<std::string> errors;
};

} // namespace

llvm::Error
titan::extractConfigOverrides(llvm::ArrayRef<const char *> args,
                              std::vector<ConfigOverride> &overrides,
                              std::vector<const char *> &rest) {
  ConfigBuilder builder;
  for (size_t i = 0; i < args.size(); ++i) {
    StringRef arg = args[i];
    if (!arg.starts_with("--") || arg == "--") {
      rest.push_back(args[i]);
      continue;
    }
    StringRef body = arg.drop_front(2);
    auto [name, value] = body.split('=');
    bool hasValue = body.contains('=');
    if (!name.contains('.')) {
      rest.push_back(args[i]);
      continue;
    }
    KeySpec *k = builder.find(name);
    if (!k) {
      auto [section, key] = name.rsplit('.');
      std::string hint = builder.suggestKey(section, key);
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     "unknown option '--%s'%s",
                                     name.str().c_str(), hint.c_str());
    }
    if (!hasValue) {
      bool isBool = std::holds_alternative<bool *>(k->field);
      // A bare boolean flag takes no option after it as its value
      // (`--debug.offload_state -o x` is the flag, then -o); other keys
      // may take negative numbers.
      StringRef next = i + 1 < args.size() ? StringRef(args[i + 1]) : "";
      bool nextIsValue =
          i + 1 < args.size() && !next.starts_with(isBool ? "-" : "--");
      if (isBool && !nextIsValue) {
        value = "true";
      } else if (!nextIsValue) {
        return llvm::createStringError(
            llvm::inconvertibleErrorCode(), "option '--%s' needs a value (%s)",
            name.str().c_str(), typeName(k->field).c_str());
      } else {
        value = args[++i];
      }
    }
    overrides.push_back({name.str(), value.str()});
  }
  return llvm::Error::success();
}

llvm::Expected<TrainConfig>
titan::loadTrainConfig(llvm::ArrayRef<ConfigOverride> overrides) {
  ConfigBuilder builder;
  // The file comes first so that command-line overrides win.
  for (const ConfigOverride &o : overrides)
    if (o.key == "job.config_file")
      builder.config.job.configFile = o.value;
  if (!builder.config.job.configFile.empty())
    builder.readToml(builder.config.job.configFile);
  return builder.finish(overrides);
}

llvm::Expected<TrainConfig>
titan::loadTrainConfigFromToml(StringRef toml, StringRef sourceName,
                               llvm::ArrayRef<ConfigOverride> overrides) {
  ConfigBuilder builder;
  for (const ConfigOverride &o : overrides)
    if (o.key == "job.config_file")
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          "--job.config_file cannot change a compiled configuration");
  builder.readTomlText(toml, sourceName);
  return builder.finish(overrides);
}

void titan::printTrainConfig(const TrainConfig &config, llvm::raw_ostream &os) {
  TrainConfig copy = config;
  std::vector<KeySpec> schema = buildSchema(copy);
  StringRef section;
  for (KeySpec &k : schema) {
    if (k.section != section) {
      os << (section.empty() ? "" : "\n") << "[" << k.section << "]\n";
      section = k.section;
    }
    std::string value = formatValue(k.field);
    if (value.empty())
      os << "# " << k.key << " = (unset)\n";
    else if (k.section == "job" && k.key == "config_file")
      // job.config_file names this file; it cannot be set inside one.
      os << "# " << k.key << " = " << value << "\n";
    else
      os << k.key << " = " << value << "\n";
  }
}

namespace {
struct GroupInfo {
  KeyGroup group;
  StringRef name;  ///< in --list-config-keys
  StringRef title; ///< in --help and docs/config-keys.md
  StringRef about;
};

const GroupInfo kGroups[] = {
    {KeyGroup::Implemented, "implemented", "Implemented",
     "TorchTitan's meaning and default (and titan's own keys)."},
    {KeyGroup::NoMeaning, "no-meaning", "Accepted, meaning nothing to titan",
     "Any value is accepted; the note says why it means nothing for a "
     "compiler."},
    {KeyGroup::Refused, "refused", "Refused unless at TorchTitan's default",
     "TorchTitan's default (no-op) value is accepted; any other value is an "
     "error naming the key and why."},
};

const GroupInfo &groupInfo(KeyGroup group) {
  return *llvm::find_if(kGroups,
                        [&](const GroupInfo &g) { return g.group == group; });
}

/// " [a|b]" or " [>= 1]": what a key allows, for --help.
std::string allowedValues(const KeySpec &k) {
  if (!k.choices.empty())
    return " [" + llvm::join(k.choices, "|") + "]";
  if (k.range)
    return " [" + k.range->describe() + "]";
  return "";
}
} // namespace

void titan::printTrainConfigKeys(llvm::raw_ostream &os) {
  TrainConfig defaults;
  std::vector<KeySpec> schema = buildSchema(defaults);
  for (const GroupInfo &g : kGroups) {
    os << "  " << g.title << ": " << g.about << "\n";
    for (const KeySpec &k : schema)
      if (k.group == g.group)
        os << llvm::formatv("    {0,-58} {1}{2}\n",
                            "--" + k.fullName() + " <" +
                                valueKind(k.field).str() + ">",
                            k.help, allowedValues(k));
    os << "\n";
  }
  os << "  Aliases:\n";
  for (auto [alias, key] : kAliases)
    os << llvm::formatv("    --{0,-56} --{1}\n", alias, key);
}

void titan::listTrainConfigKeys(llvm::raw_ostream &os) {
  TrainConfig defaults;
  for (const KeySpec &k : buildSchema(defaults))
    os << k.fullName() << "\t" << groupInfo(k.group).name << "\t"
       << formatValue(k.field) << "\n";
  for (auto [alias, key] : kAliases)
    os << alias << "\talias-of " << key << "\t\n";
}

void titan::printTrainConfigKeysMarkdown(llvm::raw_ostream &os) {
  TrainConfig defaults;
  std::vector<KeySpec> schema = buildSchema(defaults);
  os << "# Training config keys\n\n"
        "Generated by `titan-compile --list-config-keys=markdown` (refresh "
        "with\n`ninja -C build update-docs`; test/Docs checks it is "
        "current). Every key of\nTorchTitan v0.2.0's JobConfig is in one "
        "group; titan's own keys are\nimplemented.\n";
  auto escape = [](std::string text) {
    llvm::SmallString<64> out;
    for (char ch : text) {
      if (ch == '|')
        out += '\\';
      out += ch;
    }
    return std::string(out);
  };
  for (const GroupInfo &g : kGroups) {
    os << "\n## " << g.title << "\n\n" << g.about << "\n\n";
    os << "| Key | Default | Note |\n|---|---|---|\n";
    for (const KeySpec &k : schema) {
      if (k.group != g.group)
        continue;
      std::string value = formatValue(k.field);
      os << "| `" << k.fullName() << "` | "
         << (value.empty() ? "(unset)" : "`" + escape(value) + "`") << " | "
         << escape(k.help.str() + allowedValues(k)) << " |\n";
    }
  }
  os << "\n## Aliases\n\n| Alias | Key |\n|---|---|\n";
  for (auto [alias, key] : kAliases)
    os << "| `" << alias << "` | `" << key << "` |\n";
  os << "\nSpellings no TorchTitan release has, accepted with a note naming "
        "TorchTitan v0.2.0's key:\n\n| Spelling | Read as |\n|---|---|\n"
     << "| `" << kDenseFloat8Enable
     << "` | `model.converters = [\"quantize.linear.float8\"]` |\n"
     << "| `" << kDenseFloat8 << ".<key>` | `quantize.linear.float8.<key>` |\n";
  for (const ValueSpelling &v : kValueSpellings)
    os << "| `" << v.key << " = \"" << v.spelling << "\"` | `\"" << v.value
       << "\"` |\n";
}

bool titan::TrainConfig::Float8::enabled(
    const std::vector<std::string> &converters) const {
  return llvm::is_contained(converters, "quantize.linear.float8") ||
         llvm::is_contained(converters, "float8");
}
