//===- TrainConfig.h - TorchTitan-style training configuration --*- C++ -*-===//
//
// The training job configuration, read from a TOML file with TorchTitan's
// section and key names (v0.2) and overridden by `--section.key value`
// arguments. Field defaults are TorchTitan's.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONTRACT_TRAINCONFIG_H
#define TITAN_CONTRACT_TRAINCONFIG_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace llvm {
class raw_ostream;
} // namespace llvm

namespace titan {

struct TrainConfig {
  struct Job {
    std::string configFile;
    std::string dumpFolder = "./outputs";
    std::string description = "default job";
    /// TorchTitan v0.2.0's name of the former job.print_args (an alias).
    bool printConfig = false;
    std::string customConfigModule; ///< refused unless empty
  } job;

  struct Model {
    std::string name = "llama3";
    /// The model: a built-in flavor (models/<name>/<flavor>.toml), a path to
    /// a model TOML file, or a Hugging Face config.json (or its folder).
    std::string flavor = "debugmodel";
    /// The Hugging Face assets folder: the tokenizer and, for HF
    /// checkpoints, config.json. It does not define the model (TorchTitan
    /// v0.2.0) and need not exist at compile time. TorchTitan's default is
    /// "./tests/assets/tokenizer", a folder of its repository; titan's is
    /// empty (no tokenizer).
    std::string hfAssetsPath;
    /// TorchTitan's deprecated spelling of a tokenizer folder or file; wins
    /// over hf_assets_path for the tokenizer when set.
    std::string tokenizerPath;
    std::vector<std::string> converters;
    bool printAfterConversion = false;
  } model;

  struct Training {
    int64_t localBatchSize = 8;
    int64_t globalBatchSize = -1; ///< -1: local batch x data-parallel degree.
    int64_t seqLen = 2048;
    double maxNorm = 1.0;
    int64_t steps = 10000;
    std::string dataset = "c4_test";
    std::string datasetPath;
    std::string dtype = "float32";
    /// Unset: the target's default (float32 on the CPU; TorchTitan's
    /// bfloat16 on CUDA).
    std::optional<std::string> mixedPrecisionParam;
    std::string mixedPrecisionReduce = "float32";
    /// FSDP2's CPU offload: optimizer state and master weights in host
    /// memory (CUDA target).
    bool enableCpuOffload = false;
    int64_t gcFreq = 50;
    bool gcDebug = false;
    std::optional<int64_t> seed;
    bool deterministic = false;
    bool debugMoeForceLoadBalance = false;
  } training;

  struct Optimizer {
    std::string name = "AdamW";
    double lr = 8e-4;
    double beta1 = 0.9;
    double beta2 = 0.95;
    double eps = 1e-8;
    double weightDecay = 0.1;
    std::string implementation = "fused";
    bool earlyStepInBackward = false;
  } optimizer;

  struct LRScheduler {
    int64_t warmupSteps = 200;
    std::optional<double> decayRatio; ///< unset: decay right after warmup.
    std::string decayType = "linear";
    double minLrFactor = 0.0;
  } lrScheduler;

  struct Parallelism {
    int64_t dataParallelReplicateDegree = 1;
    int64_t dataParallelShardDegree = -1; ///< -1: the remaining ranks.
    std::string fsdpReshardAfterForward = "default";
    int64_t tensorParallelDegree = 1;
    bool enableAsyncTensorParallel = false;
    bool disableLossParallel = false;
    int64_t pipelineParallelDegree = 1;
    std::string pipelineParallelSchedule = "1F1B";
    std::string pipelineParallelScheduleCsv;
    int64_t pipelineParallelMicrobatchSize = 1;
    std::optional<int64_t> pipelineParallelLayersPerStage;
    int64_t pipelineParallelFirstStageLessLayers = 1;
    int64_t pipelineParallelLastStageLessLayers = 1;
    int64_t contextParallelDegree = 1;
    std::string contextParallelRotateMethod = "allgather";
    bool enableCompiledAutograd = false;
    /// TorchTitan's explicit stage split by module names (refused when set:
    /// titan splits stages by layer counts); empty: unset.
    std::vector<std::vector<std::string>> moduleFqnsPerModelPart;
    int64_t expertParallelDegree = 1;
    int64_t expertTensorParallelDegree = 1;
  } parallelism;

  struct ActivationCheckpoint {
    std::string mode = "selective";
    /// "op" (per-op selective) or a positive integer N (every Nth layer).
    std::string selectiveAcOption = "2";
    /// Modules whose linears' weight shapes selective op checkpointing
    /// always recomputes (TorchTitan v0.2.0's default names the MoE
    /// router, which a dense Llama has not).
    std::vector<std::string> perOpSacForceRecomputeMmShapesByFqns = {
        "moe.router.gate"};
    bool earlyStop = false;
    double memoryBudget = 0.5;
    bool visualizeMemoryBudgetPareto = false;
  } activationCheckpoint;

  struct Compile {
    bool enable = false;
    std::vector<std::string> components = {"model", "loss"};
    std::string backend = "inductor";
  } compile;

  struct Float8 {
    std::string recipeName; ///< empty: none.
    bool enableFsdpFloat8AllGather = false;
    bool precomputeFloat8DynamicScaleForFsdp = false;
    std::vector<std::string> filterFqns;
    bool emulate = false;
    /// Whether model.converters asks for Float8 linears.
    bool enabled(const std::vector<std::string> &converters) const;
  } float8;

  /// TorchTitan's other [quantize.*] sections: MX linears and the grouped
  /// GEMMs of MoE layers. Their converters are refused (model.converters),
  /// so these keys mean nothing to titan.
  struct OtherQuantize {
    std::string mxLinearDim1CastKernelChoice = "triton";
    std::string mxLinearRecipeName = "mxfp8_cublas";
    std::vector<std::string> mxLinearFilterFqns = {"output"};
    std::vector<std::string> float8GroupedMmFqns;
    std::string mxGroupedMmRecipeName = "mxfp8";
    std::vector<std::string> mxGroupedMmFqns;
  } otherQuantize;

  struct Checkpoint {
    bool enable = false;
    std::string folder = "checkpoint";
    int64_t interval = 500;
    std::string initialLoadPath;
    bool initialLoadModelOnly = true;
    bool initialLoadInHf = false;
    bool lastSaveInHf = false;
    bool lastSaveModelOnly = true;
    std::string exportDtype = "float32";
    int64_t keepLatestK = 10;
    int64_t loadStep = -1;
    /// Parts of a checkpoint not to load: "model", "optimizer",
    /// "lr_scheduler", "dataloader", "train_state".
    std::vector<std::string> excludeFromLoading;
    bool enableFirstStepCheckpoint = false;
    std::string asyncMode = "disabled";
    bool enableFtDataloaderCheckpoints = true;
    bool initialLoadInHfQuantized = false;
    bool createSeedCheckpoint = false;
    bool loadOnly = false;
  } checkpoint;

  struct Metrics {
    int64_t logFreq = 10;
    bool enableTensorboard = false;
    bool enableWandb = false; ///< refused: TensorBoard only
    std::string saveTbFolder = "tb";
    /// TensorBoard events from every rank (one folder each), not only from
    /// the rank that computes the loss.
    bool saveForAllRanks = false;
    bool disableColorPrinting = false;
    /// The hardware's peak TFLOP/s for MFU (titan's addition to
    /// TorchTitan's keys); 0: unknown, no MFU is reported.
    double peakTflops = 0;
  } metrics;

  /// TorchTitan's [profiling]: torch.profiler.schedule(wait = profile_freq -
  /// (active + warmup), warmup, active) - each rank writes one
  /// Chrome/Perfetto trace of the last profiler_active steps of every
  /// profile_freq steps (the steps, every kernel with its op path, every
  /// collective and wait, under pipeline parallelism every action).
  struct Profiling {
    bool enableProfiling = false;
    std::string saveTracesFolder = "profile_traces";
    int64_t profileFreq = 10;
    int64_t profilerActive = 1;
    int64_t profilerWarmup = 3;
    bool enableMemorySnapshot = false;
    std::string saveMemorySnapshotFolder = "memory_snapshot";
  } profiling;

  /// TorchTitan's [comm]: how long a collective may take before the job is
  /// aborted on every rank.
  struct Comm {
    int64_t initTimeoutSeconds = 300;
    int64_t trainTimeoutSeconds = 100;
    int64_t traceBufSize = 20000;
    std::string saveTracesFolder = "comm_traces";
    std::string saveTracesFilePrefix = "rank_";
  } comm;

  /// TorchTitan's [validation]: a forward-only loss over a held-out set
  /// every `freq` steps.
  struct Validation {
    bool enable = false;
    std::string dataset = "c4_validation";
    std::string datasetPath;
    int64_t localBatchSize = 8;
    int64_t seqLen = 2048;
    int64_t freq = 10;
    int64_t steps = -1; ///< -1: the whole validation set.
  } validation;

  /// TorchTitan's [memory_estimation]: print the memory plan.
  struct MemoryEstimation {
    bool enable = false;
    bool disableFakeMode = false;
  } memoryEstimation;

  /// TorchTitan's [fault_tolerance] (torchft): refused when enabled.
  struct FaultTolerance {
    bool enable = false;
    std::string processGroup = "gloo";
    int64_t processGroupTimeoutMs = 10000;
    int64_t replicaId = 0;
    int64_t groupSize = 0;
    int64_t minReplicaSize = 1;
    std::optional<std::string> semiSyncMethod;
  } faultTolerance;

  /// TorchTitan's [experimental]: Python extension points (refused when
  /// set).
  struct Experimental {
    std::string customImport;
    std::string customArgsModule;
  } experimental;

  /// titan's own debugging keys ([debug] also holds the aliases debug.seed
  /// and debug.deterministic of training.seed and training.deterministic).
  struct Debug {
    bool noCudaGraphs = false;
    /// Each collective waited where it is issued: no latency-hiding
    /// schedule (kernel-schedule-collectives), no CPU progress thread.
    bool noCommOverlap = false;
    /// Weight gradients rounded to bf16 before their cast to f32, as
    /// TorchTitan's eager FSDP2 computes them: no titan-widen-gemm-results.
    bool noWidenGemmResults = false;
    /// training.enable_cpu_offload's placement on any target (the CPU
    /// target's test of the offload path).
    bool offloadState = false;
  } debug;

  /// What the reader made of spellings that are not TorchTitan v0.2.0's
  /// (quantize.dense.float8.enable, interleave_1f1b), one line each naming
  /// TorchTitan's key; not a key itself.
  std::vector<std::string> notes;
};

/// One `--section.key value` argument from the command line.
struct ConfigOverride {
  std::string key;   ///< "section.key", e.g. "training.steps".
  std::string value; ///< as written; "true" for a bare boolean flag.
};

/// Moves every `--section.key value`, `--section.key=value` and bare boolean
/// `--section.key` argument (one not followed by a value: the next argument
/// is an option, starting with '-') of `args` into `overrides`; other arguments
/// are appended to `rest` in order. An argument is a config override when its
/// name contains a '.'; a name that is not a config key is an error that
/// suggests the nearest one.
llvm::Error extractConfigOverrides(llvm::ArrayRef<const char *> args,
                                   std::vector<ConfigOverride> &overrides,
                                   std::vector<const char *> &rest);

/// Builds the configuration: TorchTitan defaults, then the TOML file named by
/// the `job.config_file` override (if any), then the overrides in order. The
/// error lists every problem found: unknown sections and keys (with a
/// suggestion for near misses), wrong value types and out-of-range values,
/// each naming the key and where it was written.
llvm::Expected<TrainConfig>
loadTrainConfig(llvm::ArrayRef<ConfigOverride> overrides);

/// What titan does with a TorchTitan config key.
enum class KeyGroup {
  /// TorchTitan's meaning and default (or titan's own key).
  Implemented,
  /// Accepted with any value; it means nothing for a compiler (the note
  /// says why).
  NoMeaning,
  /// Accepted at TorchTitan's default (no-op) value; any other value is an
  /// error naming the key and why.
  Refused,
};

/// Describes every config key for --help, grouped by KeyGroup: its
/// command-line form, value type, allowed values and meaning.
void printTrainConfigKeys(llvm::raw_ostream &os);

/// Lists every config key, one per line, `section.key<TAB>group<TAB>default`
/// (group: implemented, no-meaning or refused; default: a TOML value, empty
/// when unset), then each alias as `alias<TAB>alias-of <key><TAB>`.
void listTrainConfigKeys(llvm::raw_ostream &os);

/// Writes docs/config-keys.md: every key by group with its note.
void printTrainConfigKeysMarkdown(llvm::raw_ostream &os);

/// Like loadTrainConfig, but starting from the TOML text `toml` (named
/// `sourceName` in messages) instead of a file; a `job.config_file` override
/// is not allowed. Compiled training executables use it to apply run-time
/// overrides to the configuration they were compiled with.
llvm::Expected<TrainConfig>
loadTrainConfigFromToml(llvm::StringRef toml, llvm::StringRef sourceName,
                        llvm::ArrayRef<ConfigOverride> overrides);

/// Prints the configuration as TOML, every key included under TorchTitan
/// v0.2.0's names (TorchTitan's `--job.print_config`).
void printTrainConfig(const TrainConfig &config, llvm::raw_ostream &os);

} // namespace titan

#endif // TITAN_CONTRACT_TRAINCONFIG_H
