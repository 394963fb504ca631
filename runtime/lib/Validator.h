//===- Validator.h - TorchTitan's [validation] loop -------------*- C++ -*-===//
//
// validation.enable: every validation.freq steps (and after the first), the
// compiled forward-only `eval` step over the validation set, its loss
// averaged as TorchTitan v0.2.0's Validator averages it
// (torchtitan/components/validate.py).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_VALIDATOR_H
#define TITANRT_LIB_VALIDATOR_H

#include "Communicator.h"
#include "Dataset.h"
#include "Manifest.h"

#include "titan/Contract/TrainConfig.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace titanrt {

/// Runs the compiled eval step on one batch of this rank (rows of its
/// share of each sequence, on the host) and returns the batch's loss, the
/// mean over every data-parallel rank's rows as the compiled loss is: the
/// whole-step `eval`, or under pipeline parallelism the stages' eval steps
/// through the forward-only schedule. `wholeTokens` holds the whole
/// sequences' tokens (rows of validation.seq_len) where the Validator was
/// asked for them (TorchTitan's block-causal mask), else null.
using EvaluateBatch = std::function<double(
    const int32_t *tokens, const int32_t *labels, const int32_t *wholeTokens)>;

/// What one validation measured.
struct ValidationResult {
  /// The mean of the batches' losses (each the mean over the global batch
  /// of every data-parallel rank, as the compiled loss is).
  double loss;
  int64_t batches;
  /// Tokens of the global batches evaluated, and the time it took.
  int64_t tokens;
  double seconds;
};

/// The validation loop of one rank.
class Validator {
public:
  /// `dp` data-parallel ranks, this one the `dpIndex`th; `shard` its part
  /// of each sequence (context parallel). With `wholeSequences`, each
  /// batch's whole sequences reach `evaluate` too.
  Validator(const titan::TrainConfig &c, const Manifest &m,
            EvaluateBatch evaluate, Communicator *comm, SequenceShard shard,
            int64_t dp, int64_t dpIndex, bool wholeSequences = false);

  /// TorchTitan's should_validate: after step 1 and every freq-th step
  /// (`step` counts from 1).
  bool due(int64_t step) const {
    return step == 1 || step % c.validation.freq == 0;
  }

  /// The validation set, for the log.
  std::string describe() const { return data->describe(); }

  /// One validation: the eval step on each batch, the losses averaged:
  /// validation.steps batches, or with -1 every whole global batch of the
  /// set once (its last, partial batch is left out: the eval step's shape
  /// is static). A whole pass starts from the set's first sample each
  /// time; N batches continue from where the previous validation stopped.
  ValidationResult validate();

private:
  /// Reads validation batch `b` of this rank; false, on every rank, once
  /// some rank's share has no whole batch left.
  bool readBatch(int64_t b, int32_t *tokens, int32_t *labels,
                 int32_t *wholeTokens);

  const titan::TrainConfig &c;
  EvaluateBatch evaluate;
  Communicator *comm;
  std::unique_ptr<Dataset> data;
  int64_t batch, seqLen, localSeq, dp, dpIndex;
  /// With validation.steps = N: the stream's next batch.
  int64_t nextBatch = 0;
  /// The batch's tokens, then its labels, drawn on the host; its whole
  /// sequences' tokens where asked for.
  std::vector<int32_t> hostBatch, wholeBatch;
};

} // namespace titanrt

#endif // TITANRT_LIB_VALIDATOR_H
