//===- Plan.h - searching parallel layouts for a training job ---*- C++ -*-===//
//
// titan-compile --plan auto: enumerate every parallel layout of a job on N
// devices (the degrees pp x dp_replicate x dp_shard x cp x tp, the pipeline
// schedule and microbatch size, the local batch, the activation
// checkpointing mode, Float8 and async TP), reject what titan's own checks
// reject, prune what cannot fit by a lower bound on its memory, and rank
// the rest by a predictor (the cost model of the compiled programs) in
// order of a roofline upper bound on their throughput, so the search stops
// once no remaining layout can beat the best one found.
//
// The predictor is a callback: titan-compile's compiles the job (see
// tools/titan-compile/Plan.h); tests pass their own.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_PLANNER_PLAN_H
#define TITAN_PLANNER_PLAN_H

#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Cost/Hardware.h"
#include "titan/Model/MeshDegrees.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace titan::plan {

/// One layout: what --plan auto sets in the training config.
struct Candidate {
  MeshDegrees mesh;
  /// Pipeline schedule ("" without pp) and microbatch size (pp only).
  std::string schedule;
  int64_t microbatchSize = 1;
  int64_t localBatch = 1;
  /// activation_checkpoint: "none", "op" (selective per-op) or "full".
  std::string ac = "none";
  bool float8 = false, asyncTP = false;
  /// Gradient accumulation steps: global batch / (local batch x dp).
  int64_t accumulation = 1;

  /// What the programs depend on besides the mesh (a cache key).
  std::string key() const;
  /// "dp_replicate x dp_shard x cp x tp x pp", e.g. "1x8x1x8x8".
  std::string degrees() const;
};

/// `base` with `c`'s keys set (the mesh's degrees, the schedule, the local
/// and global batch, AC, Float8's converter, async TP).
TrainConfig applyCandidate(const TrainConfig &base, const Candidate &c);

/// The command-line overrides that reproduce `c` with titan-compile (and
/// TorchTitan's train.py): `--parallelism.tensor_parallel_degree 8 ...`.
std::string overrides(const Candidate &c, int64_t globalBatch);

/// What the predictor says about one layout.
struct Score {
  double stepSeconds = 0, tokensPerSecondPerDevice = 0, mfu = 0;
  /// Communication compute waited for, per step, by group of mesh axes.
  std::map<std::string, double> exposedCommSeconds;
  double bubble = 0;
  /// The largest planned peak over the job's programs, bytes.
  int64_t peakBytes = 0;
  /// What the prediction cost (the predictor's unit: titan-compile counts
  /// the blocks and programs it compiled), for Request::maxWork.
  double work = 0;

  double exposedComm() const;
};

/// Predicts a layout (the config has the candidate applied): the error is
/// the compiler's when titan rejects it.
using Predictor = std::function<llvm::Expected<Score>(
    const TrainConfig &config, const Candidate &candidate)>;

struct Request {
  int64_t gpus = 1;
  /// The bytes a rank's planned memory may use.
  int64_t memoryBytes = 0;
  cost::Hardware hardware;
  int64_t top = 10;
  /// Searches Float8 (needs a device with FP8 GEMMs) and async TP.
  bool float8 = true, asyncTP = true;
  /// Training runs in bf16 (GPUs' default) rather than f32: the state and
  /// activation element size of the memory bound, the peak of the
  /// throughput bound.
  bool bf16 = true;
  /// More checks a candidate must pass (titan-compile's
  /// diagnoseUnsupported); errors count as rejections by rule.
  std::function<llvm::Error(const TrainConfig &)> extraCheck;
  /// Wall seconds the predictions may take, and their total Score::work
  /// (0: no limit); candidates left when either runs out are counted, not
  /// predicted. The work limit keeps the result the same on any machine.
  double maxSeconds = 0, maxWork = 0;
};

/// Why candidates left the search, with an example message for each.
struct Counts {
  int64_t enumerated = 0, rejectedByRule = 0, prunedByBound = 0, dominated = 0,
          prunedByRoofline = 0, predicted = 0, rejectedByCompiler = 0,
          overMemory = 0, fitted = 0, overTime = 0, prunedBySmallest = 0;
  /// Rejection reason -> (candidates, one message).
  std::map<std::string, std::pair<int64_t, std::string>> reasons;
  /// The smallest lower bound / planned peak of any candidate, bytes.
  int64_t smallestBound = -1, smallestPeak = -1;
  void reject(llvm::StringRef reason, llvm::StringRef message);
};

struct Ranked {
  Candidate candidate;
  Score score;
  std::string why;
};

struct PlanResult {
  std::vector<Ranked> fitted; ///< best first
  Counts counts;
  /// The whole search, and its enumeration, rules and bounds; the
  /// predictions' total work.
  double seconds = 0, screenSeconds = 0, work = 0;
};

/// Every layout of `gpus` devices for `model` and `config`'s global batch
/// and sequence length (the candidates before any check), in a fixed order.
std::vector<Candidate> enumerate(const LlamaArgs &model,
                                 const TrainConfig &config,
                                 const Request &request);

/// Lower bound of a rank's planned bytes: the parameters, f32 gradients
/// and the two AdamW moments of its share of the model (over dp_shard x cp
/// x tp x pp; f32 master weights), its parameters' working copy when
/// training in bf16, and what its blocks keep per token under the AC mode
/// for every block-microbatch alive at once (`liveBlocks`; -1: the rank's
/// share of the blocks, one microbatch).
int64_t memoryLowerBound(const LlamaArgs &model, const TrainConfig &config,
                         const Candidate &c, bool bf16, double liveBlocks = -1);

/// Upper bound of tokens/s per device: every FLOP of the step (the model's
/// 6N + 12 L H Q T per token and what checkpointing recomputes at least) at
/// the hardware's best GEMM and attention efficiency, idle for the
/// schedule's textbook bubble. 0 when the description has no peak.
double throughputUpperBound(const LlamaArgs &model, const TrainConfig &config,
                            const Candidate &c, const cost::Hardware &hw,
                            bool bf16);

/// The search: enumerate, check, bound, predict in upper-bound order,
/// keep the fitting ones ranked by tokens/s per device.
PlanResult search(const LlamaArgs &model, const TrainConfig &config,
                  const Request &request, const Predictor &predict);

/// The top `top` table.
void printTable(const PlanResult &result, const Request &request,
                llvm::raw_ostream &os);
/// The counts and the rejection reasons.
void printCounts(const PlanResult &result, llvm::raw_ostream &os);
/// Every fitted candidate and the counts as one JSON object.
void printJSON(const PlanResult &result, const Request &request,
               llvm::raw_ostream &os);

} // namespace titan::plan

#endif // TITAN_PLANNER_PLAN_H
