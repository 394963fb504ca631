//===- TrainConfig.cpp - TorchTitan-style training configuration ----------===//
//
// One schema table binds each "section.key" to a TrainConfig field, its
// documentation and its allowed values. The TOML reader, the command-line
// overrides, the validator and the printer all walk that table, so a key is
// declared exactly once.
//
//===----------------------------------------------------------------------===//

#include "titan/Config/TrainConfig.h"
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

#include <cmath>
#include <limits>
#include <variant>

using namespace titan;
using llvm::StringRef;

namespace {

using FieldRef =
    std::variant<bool *, int64_t *, double *, std::string *,
                 std::vector<std::string> *, std::optional<int64_t> *,
                 std::optional<double> *, std::optional<std::string> *>;

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

  std::string fullName() const { return (section + "." + key).str(); }

  KeySpec &oneOf(std::initializer_list<StringRef> values, bool empty = false) {
    choices.assign(values);
    allowEmpty = empty;
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
                                 "checkpoint",
                                 "metrics",
                                 "profiling",
                                 "comm",
                                 "memory_estimation",
                                 "validation",
                                 "debug"};

/// The schema, bound to the fields of `c`.
std::vector<KeySpec> buildSchema(TrainConfig &c) {
  std::vector<KeySpec> s;
  auto add = [&](StringRef section, StringRef key, FieldRef field,
                 StringRef help) -> KeySpec & {
    s.push_back(KeySpec{section, key, field, help, {}, true, std::nullopt});
    return s.back();
  };
  add("job", "config_file", &c.job.configFile, "Job config file (TOML)");
  add("job", "dump_folder", &c.job.dumpFolder, "Folder for job outputs");
  add("job", "description", &c.job.description, "Description of the job");
  add("job", "print_args", &c.job.printArgs, "Print the resolved config");

  add("model", "name", &c.model.name, "Model family").oneOf({"llama3"});
  add("model", "flavor", &c.model.flavor,
      "Built-in flavor (models/<name>/<flavor>.toml) or a model TOML path");
  add("model", "hf_assets_path", &c.model.hfAssetsPath,
      "Folder with a Hugging Face config.json; the model is built from it");
  add("model", "tokenizer_path", &c.model.tokenizerPath,
      "Deprecated (TorchTitan): the tokenizer's folder or file; "
      "model.hf_assets_path is the current key");
  add("model", "converters", &c.model.converters, "Model converters to apply")
      .oneOf({"float8", "quantize.linear.float8"});

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
      "Token file (.bin of uint32) or text file");
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
      "Keep optimizer state and master weights in host memory (CUDA)");

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
      "AdamW implementation (titan's is always one fused kernel)")
      .oneOf({"for-loop", "foreach", "fused"});
  add("optimizer", "early_step_in_backward", &c.optimizer.earlyStepInBackward,
      "Update each parameter as soon as its gradient is complete");

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
      "Pipeline schedule")
      .oneOf({"GPipe", "1F1B", "Interleaved1F1B", "LoopedBFS",
              "InterleavedZeroBubble", "ZBVZeroBubble", "DualPipeV"});
  add("parallelism", "pipeline_parallel_schedule_csv",
      &p.pipelineParallelScheduleCsv,
      "A file of each pipeline rank's actions (TorchTitan's CSV format, "
      "e.g. 0F0,0F1,0B0,...), run instead of the named schedule, whose "
      "stage layout it keeps");
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

  add("quantize.linear.float8", "recipe_name", &c.float8.recipeName,
      "Float8 scaling recipe")
      .oneOf({"tensorwise", "rowwise", "rowwise_with_gw_hp"},
             /*empty=*/true);
  add("quantize.linear.float8", "enable_fsdp_float8_all_gather",
      &c.float8.enableFsdpFloat8AllGather, "All-gather weights in float8");
  add("quantize.linear.float8", "precompute_float8_dynamic_scale_for_fsdp",
      &c.float8.precomputeFloat8DynamicScaleForFsdp,
      "One fused amax reduction for all FSDP float8 weights");
  add("quantize.linear.float8", "filter_fqns", &c.float8.filterFqns,
      "Linear layers kept in high precision");
  add("quantize.linear.float8", "emulate", &c.float8.emulate,
      "Emulate the float8 GEMMs (the CPU target always does)");

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
      "Background saves (titan saves synchronously)")
      .oneOf({"disabled", "async", "async_with_pinned_mem"});
  add("checkpoint", "load_step", &c.checkpoint.loadStep,
      "Step to resume from (with checkpoint.enable, -1 is the latest)")
      .atLeast(0)
      .orSentinel(-1, "the latest");

  add("metrics", "log_freq", &c.metrics.logFreq, "Steps between log lines")
      .atLeast(1);
  add("metrics", "enable_tensorboard", &c.metrics.enableTensorboard,
      "Write TensorBoard events");
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
      "Write a Chrome/Perfetto trace of every profile_freq-th step per rank");
  add("profiling", "save_traces_folder", &c.profiling.saveTracesFolder,
      "Trace folder under job.dump_folder "
      "(iteration_<step>/rank<r>_trace.json)");
  add("profiling", "profile_freq", &c.profiling.profileFreq,
      "Steps between traced steps")
      .atLeast(1);

  add("comm", "init_timeout_seconds", &c.comm.initTimeoutSeconds,
      "Seconds a collective may take during start-up and the first step "
      "before every rank is aborted")
      .atLeast(1);
  add("comm", "train_timeout_seconds", &c.comm.trainTimeoutSeconds,
      "Seconds a collective may take after the first step before every rank "
      "is aborted")
      .atLeast(1);

  add("memory_estimation", "enable", &c.memoryEstimation.enable,
      "Print the compiled memory plan (titan's is exact, not estimated)");

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

  add("debug", "seed", &c.debug.seed, "Base RNG seed").atLeast(0);
  add("debug", "deterministic", &c.debug.deterministic,
      "Deterministic algorithms only");
  add("debug", "no_cuda_graphs", &c.debug.noCudaGraphs,
      "CUDA target: launch each kernel of every step instead of capturing "
      "the steps once as CUDA graphs and replaying them (titan's own key)");
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

std::string location(StringRef path, const toml::source_region &region) {
  return llvm::formatv("{0}:{1}:{2}", path, region.begin.line,
                       region.begin.column);
}

class ConfigBuilder {
public:
  ConfigBuilder() : schema(buildSchema(config)) {}

  KeySpec *find(StringRef section, StringRef key) {
    for (KeySpec &k : schema)
      if (k.section == section && k.key == key)
        return &k;
    return nullptr;
  }
  KeySpec *find(StringRef fullKey) {
    for (KeySpec &k : schema)
      if (k.fullName() == fullKey)
        return &k;
    return nullptr;
  }

  /// "did you mean ..." for an unknown key, looking first in its own section,
  /// then for the same key name in other sections, then for a near full name.
  std::string suggestKey(StringRef section, StringRef key) {
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
    std::string full = (section + "." + key).str();
    hit = closestMatch(full, refs);
    if (!hit.empty())
      return ("; did you mean '" + hit + "'?").str();
    return "";
  }

  std::string suggestSection(StringRef section) {
    std::vector<StringRef> names(std::begin(kSections), std::end(kSections));
    StringRef hit = closestMatch(section, names);
    return hit.empty() ? "" : ("; did you mean [" + hit + "]?").str();
  }

  bool isSectionPrefix(StringRef path) {
    for (StringRef s : kSections)
      if (s.starts_with(path) && s.size() > path.size() &&
          s[path.size()] == '.')
        return true;
    return false;
  }
  bool isSection(StringRef path) { return llvm::is_contained(kSections, path); }

  void error(const std::string &where, const std::string &msg) {
    errors.push_back(where.empty() ? msg : where + ": " + msg);
  }

  /// Checks enumerations and ranges of the value now in `k`'s field.
  void checkValue(KeySpec &k, const std::string &where) {
    auto checkChoice = [&](const std::string &v) {
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
          } else {
            const toml::array *arr = node.as_array();
            if (!arr)
              return false;
            p->clear();
            for (const toml::node &e : *arr) {
              if (!e.is_string())
                return false;
              p->push_back(std::string(*e.value<std::string_view>()));
            }
          }
          return true;
        },
        k.field);
    if (!ok)
      return wrongType(k, where, describe(node));
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
    handleParse(path, toml::parse_file(std::string_view(path)));
  }

  void readTomlText(StringRef text, StringRef sourceName) {
    handleParse(sourceName, toml::parse(std::string_view(text),
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
      setFromString(*k, o.value, "command line");
    }
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
    if (c.checkpoint.keepLatestK == 1)
      error("", "checkpoint.keep_latest_k: 1 is not allowed (the newest "
                "checkpoint may still be being written); use 0 (keep all) "
                "or >= 2");
    if (c.checkpoint.lastSaveInHf && !c.checkpoint.lastSaveModelOnly)
      error("", "checkpoint.last_save_in_hf requires "
                "checkpoint.last_save_model_only = true (safetensors hold "
                "tensors only)");
  }

  TrainConfig config;
  std::vector<KeySpec> schema;
  std::vector<std::string> errors;
};

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
      bool nextIsValue =
          i + 1 < args.size() && !StringRef(args[i + 1]).starts_with("--");
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
    std::string value = std::visit(
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
          else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
            std::vector<std::string> quoted;
            for (const std::string &s : *p)
              quoted.push_back(quote(s));
            return "[" + llvm::join(quoted, ", ") + "]";
          } else if constexpr (std::is_same_v<T, std::optional<int64_t>>)
            return *p ? std::to_string(**p) : "";
          else if constexpr (std::is_same_v<T, std::optional<std::string>>)
            return *p ? quote(**p) : "";
          else
            return *p ? formatDouble(**p) : "";
        },
        k.field);
    if (value.empty())
      os << "# " << k.key << " = (unset)\n";
    else if (k.section == "job" && k.key == "config_file")
      // job.config_file names this file; it cannot be set inside one.
      os << "# " << k.key << " = " << value << "\n";
    else
      os << k.key << " = " << value << "\n";
  }
}

void titan::printTrainConfigKeys(llvm::raw_ostream &os) {
  TrainConfig defaults;
  for (const KeySpec &k : buildSchema(defaults)) {
    std::string option = "--" + k.fullName();
    std::string allowed;
    if (!k.choices.empty())
      allowed = " [" + llvm::join(k.choices, "|") + "]";
    else if (k.range)
      allowed = " [" + k.range->describe() + "]";
    os << llvm::formatv("  {0,-58} {1}{2}\n",
                        option + " <" + valueKind(k.field).str() + ">", k.help,
                        allowed);
  }
}

bool titan::TrainConfig::Float8::enabled(
    const std::vector<std::string> &converters) const {
  return llvm::is_contained(converters, "quantize.linear.float8") ||
         llvm::is_contained(converters, "float8");
}
