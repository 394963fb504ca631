//===- ConfigFit.cpp - does a training config fit a model? ----------------===//
//
// These checks mirror the sharding plans the distribution passes apply
// (TorchTitan's): rejecting a config here gives one clear message up front
// instead of an uneven shard deep inside a pass.
//
//===----------------------------------------------------------------------===//

#include "titan/Model/ConfigFit.h"
#include "titan/Contract/LlamaArgs.h"
#include "titan/Contract/TrainConfig.h"
#include "titan/Model/PipelineStages.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <limits>
#include <numeric>

using namespace titan;
using llvm::StringRef;

/// Schedules that place more than one (virtual) stage on each rank.

llvm::Error titan::checkModelFitsConfig(const LlamaArgs &a,
                                        const TrainConfig &c) {
  std::vector<std::string> errs;
  const auto &p = c.parallelism;
  int64_t seq = c.training.seqLen;

  // `divisor` names the keys it is made of.
  auto mustDivide = [&](StringRef divisor, int64_t degree, StringRef dimName,
                        int64_t dim, StringRef why) {
    if (degree > 1 && dim % degree != 0)
      errs.push_back(llvm::formatv("{0} ({1}) does not divide {2} ({3}): {4}",
                                   divisor, degree, dimName, dim, why));
  };

  int64_t tp = p.tensorParallelDegree;
  StringRef tpKey = "parallelism.tensor_parallel_degree";
  mustDivide(tpKey, tp, "n_heads", a.nHeads,
             "wq/wo are sharded by attention head");
  mustDivide(tpKey, tp, "n_kv_heads", a.nKvHeads,
             "wk/wv are sharded by key/value head");
  mustDivide(tpKey, tp, "the FFN hidden size", a.ffnHidden,
             "w1/w3 are sharded column-wise and w2 row-wise");
  mustDivide(tpKey, tp, "vocab_size", a.vocabSize,
             "the embedding and output are sharded by vocabulary");
  mustDivide(tpKey, tp, "dim", a.dim,
             "sequence-parallel norms shard activations");

  // Context parallel cuts the sequence into 2 x cp load-balanced chunks;
  // sequence parallel then splits each chunk over tp. (Degrees of 2^31 or
  // more, whose product could overflow, are refused below: too many ranks.)
  int64_t cp = p.contextParallelDegree;
  constexpr int64_t kMaxDegree = std::numeric_limits<int32_t>::max();
  bool multiplies = cp <= kMaxDegree && tp <= kMaxDegree;
  if (cp == 1)
    mustDivide(tpKey, tp, "training.seq_len", seq,
               "sequence parallel shards the sequence");
  else if (multiplies && (seq % (2 * cp) != 0 || tp == 1))
    mustDivide("2 x parallelism.context_parallel_degree", 2 * cp,
               "training.seq_len", seq,
               "causal load balancing splits the sequence into 2 x cp chunks");
  else if (multiplies)
    mustDivide("2 x parallelism.context_parallel_degree x "
               "parallelism.tensor_parallel_degree",
               2 * cp * tp, "training.seq_len", seq,
               "sequence parallel splits each of the 2 x cp load-balanced "
               "chunks over tp");

  // TorchTitan's stage split (PipelineStages.h) must work out.
  if (p.pipelineParallelDegree > 1)
    if (llvm::Expected<PipelinePlan> plan = planPipelineStages(
            a.nLayers, p.pipelineParallelDegree, p.pipelineParallelSchedule,
            p.pipelineParallelLayersPerStage,
            p.pipelineParallelFirstStageLessLayers,
            p.pipelineParallelLastStageLessLayers);
        !plan)
      errs.push_back(llvm::toString(plan.takeError()));

  // Sizes the step's tensors multiply out of: each must fit a 64-bit byte
  // count (float32 elements), or no buffer of the step can be planned.
  auto mustFit =
      [&](std::initializer_list<std::pair<StringRef, int64_t>> factors) {
        int64_t bytes = 4;
        bool overflow = false;
        for (auto [name, value] : factors)
          overflow |=
              value <= 0 || __builtin_mul_overflow(bytes, value, &bytes);
        if (!overflow)
          return;
        std::vector<std::string> terms;
        for (auto [name, value] : factors)
          terms.push_back(llvm::formatv("{0} ({1})", name, value).str());
        errs.push_back(
            "the step's tensors are too large: " + llvm::join(terms, " x ") +
            " x 4 bytes overflows a 64-bit byte count");
      };
  int64_t batch = c.training.localBatchSize;
  mustFit({{"training.local_batch_size", batch},
           {"training.seq_len", seq},
           {"the model's dim", a.dim}});
  mustFit({{"training.local_batch_size", batch},
           {"training.seq_len", seq},
           {"the FFN hidden size", a.ffnHidden}});
  mustFit({{"training.local_batch_size", batch},
           {"training.seq_len", seq},
           {"vocab_size", a.vocabSize}});
  // Attention's per-head score block.
  mustFit({{"training.seq_len", seq}, {"training.seq_len", seq}});
  mustFit({{"vocab_size", a.vocabSize}, {"the model's dim", a.dim}});
  mustFit({{"the FFN hidden size", a.ffnHidden}, {"the model's dim", a.dim}});

  // The mesh's ranks are C ints in MPI and NCCL.
  int64_t ranks = 1;
  bool tooMany = false;
  for (int64_t degree :
       {p.pipelineParallelDegree, p.dataParallelReplicateDegree,
        std::max<int64_t>(p.dataParallelShardDegree, 1),
        p.contextParallelDegree, p.tensorParallelDegree})
    tooMany |= __builtin_mul_overflow(ranks, degree, &ranks) ||
               ranks > std::numeric_limits<int32_t>::max();
  if (tooMany)
    errs.push_back(llvm::formatv(
        "the parallel degrees (pipeline {0} x dp_replicate {1} x dp_shard {2} "
        "x context {3} x tensor {4}) need more than 2^31 - 1 ranks",
        p.pipelineParallelDegree, p.dataParallelReplicateDegree,
        p.dataParallelShardDegree, p.contextParallelDegree,
        p.tensorParallelDegree));

  // Gradient accumulation: a step of more than a million microbatches is a
  // mistaken global batch, not a plan.
  constexpr int64_t kMaxMicrobatches = 1 << 20;
  if (c.training.globalBatchSize > 0 && batch > 0 &&
      c.training.globalBatchSize / batch > kMaxMicrobatches)
    errs.push_back(llvm::formatv(
        "training.global_batch_size ({0}) is {1} times "
        "training.local_batch_size ({2}): more than {3} microbatches per "
        "optimizer step",
        c.training.globalBatchSize, c.training.globalBatchSize / batch, batch,
        kMaxMicrobatches));

  if (errs.empty())
    return llvm::Error::success();
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 llvm::join(errs, "\n"));
}
