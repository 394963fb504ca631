//===- Validator.cpp - TorchTitan's [validation] loop ---------------------===//

#include "Validator.h"
#include "Error.h"

#include <chrono>

using namespace titanrt;

namespace {
/// The validation set: validation.dataset(_path), read as the training data
/// is (Dataset::open), a finite pass when validation.steps is -1. The one
/// place that chooses the validation data source.
std::unique_ptr<Dataset> openValidationSet(const titan::TrainConfig &c,
                                           const Manifest &m,
                                           SequenceShard shard, int64_t dp,
                                           int64_t dpIndex) {
  DataOptions o;
  o.section = "validation";
  o.name = c.validation.dataset;
  o.path = c.validation.datasetPath;
  o.vocabSize = m.vocab;
  o.seqLen = m.eval->seqLen;
  o.sequence = shard;
  o.share = {dpIndex, dp, m.eval->localBatch, m.eval->localBatch};
  o.loop = c.validation.steps != -1;
  return Dataset::open(o, c);
}
} // namespace

Validator::Validator(const titan::TrainConfig &c, const Manifest &m,
                     EvaluateBatch evaluate, Communicator *comm,
                     SequenceShard shard, int64_t dp, int64_t dpIndex,
                     bool wholeSequences)
    : c(c), evaluate(std::move(evaluate)), comm(comm),
      data(openValidationSet(c, m, shard, dp, dpIndex)),
      batch(m.eval->localBatch), seqLen(m.eval->seqLen),
      localSeq(data->localLength()), dp(dp), dpIndex(dpIndex),
      hostBatch(size_t(2 * batch * localSeq)),
      wholeBatch(wholeSequences ? size_t(batch * seqLen) : 0) {}

bool Validator::readBatch(int64_t b, int32_t *tokens, int32_t *labels,
                          int32_t *wholeTokens) {
  // Data-parallel rank d reads rows [(b x dp + d) x batch, ... + batch)
  // of the set, as the training batches are laid out.
  bool whole = true;
  for (int64_t row = 0; row < batch && whole; ++row)
    whole = data->sample((b * dp + dpIndex) * batch + row,
                         tokens + row * localSeq, labels + row * localSeq,
                         wholeTokens ? wholeTokens + row * seqLen : nullptr);
  if (!comm)
    return whole;
  // Every rank runs the eval step's collectives the same number of times:
  // a finite pass ends for all at the first rank whose share ran out
  // (TorchTitan warns that its own ranks can hang there).
  double mine = whole ? 0.0 : 1.0;
  comm->hostAllReduce(&mine, 1, Reduction::Max, (1u << kNumAxes) - 1);
  return mine == 0.0;
}

ValidationResult Validator::validate() {
  auto start = std::chrono::steady_clock::now();
  int32_t *tokens = hostBatch.data();
  int32_t *labels = hostBatch.data() + batch * localSeq;
  int32_t *wholeTokens = wholeBatch.empty() ? nullptr : wholeBatch.data();
  double lossSum = 0;
  // As TorchTitan's validation dataloader: steps = -1 is one pass over
  // the set from its start each time; steps = N continues the (looping)
  // stream where the previous validation stopped.
  bool wholePass = c.validation.steps < 0;
  if (wholePass)
    data->rewind(0);
  int64_t first = wholePass ? 0 : nextBatch;
  int64_t b = 0;
  for (; wholePass || b < c.validation.steps; ++b) {
    if (!readBatch(first + b, tokens, labels, wholeTokens))
      break;
    lossSum += evaluate(tokens, labels, wholeTokens);
  }
  if (b == 0)
    fatal("validation: the validation set holds fewer samples than one "
          "global validation batch (" +
          std::to_string(batch * dp) +
          " = validation.local_batch_size x the data-parallel degree, each "
          "validation.seq_len + 1 tokens)");
  int64_t batches = b;
  nextBatch = first + batches;
  // TorchTitan sums the batches' losses, divides by their count and
  // takes the mean over the data-parallel ranks; each compiled loss is
  // already the mean over every rank's rows (equal counts), so the mean
  // over the batches is the same number.
  return {
      lossSum / double(batches), batches, batches * batch * dp * seqLen,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count()};
}
