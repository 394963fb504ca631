//===- Validator.cpp - TorchTitan's [validation] loop ---------------------===//

#include "Validator.h"
#include "Error.h"

#include "titanrt/Device.h"

#include <chrono>

using namespace titanrt;

namespace {
/// The validation set: validation.dataset_path, read as the training data
/// is (a .bin file of token ids, or text). The one place that chooses the
/// validation data source.
Dataset openValidationSet(const titan::TrainConfig &c, const Manifest &m,
                          SequenceShard shard) {
  const std::string &path = c.validation.datasetPath;
  if (path.empty())
    fatal("validation.enable needs validation.dataset_path (a .bin token "
          "file or a text file); validation.dataset = \"" +
          c.validation.dataset + "\" names no file titan can read");
  requireRegularFile(path, "validation.dataset_path");
  return Dataset(path, m.vocab, m.eval->seqLen, shard);
}
} // namespace

Validator::Validator(const titan::TrainConfig &c, const Manifest &m,
                     void (*eval)(char *arena), Device &device, EvalSlots slots,
                     SequenceShard shard, int64_t dp, int64_t dpIndex)
    : c(c), eval(eval), device(device), slots(slots),
      data(openValidationSet(c, m, shard)), batch(m.eval->localBatch),
      seqLen(m.eval->seqLen), localSeq(data.localLength()), dp(dp),
      dpIndex(dpIndex) {
  // TorchTitan's validation set is finite: steps = -1 is one pass over
  // it. Its last, partial batch is left out: the eval step's shape is
  // static.
  batches = c.validation.steps > 0 ? c.validation.steps
                                   : data.numSamples() / (batch * dp);
  if (batches == 0)
    fatal("validation.dataset_path '" + c.validation.datasetPath + "' holds " +
          std::to_string(data.numSamples()) +
          " samples, fewer than one global validation batch (" +
          std::to_string(batch * dp) +
          " = validation.local_batch_size x the data-parallel degree)");
  if (!device.hostAccessible())
    hostBatch.resize(size_t(2 * batch * localSeq));
}

ValidationResult Validator::validate() {
  auto start = std::chrono::steady_clock::now();
  bool host = device.hostAccessible();
  int32_t *tokens =
      host ? reinterpret_cast<int32_t *>(slots.tokens) : hostBatch.data();
  int32_t *labels = host ? reinterpret_cast<int32_t *>(slots.labels)
                         : hostBatch.data() + batch * localSeq;
  size_t bytes = size_t(batch * localSeq) * sizeof(int32_t);
  double lossSum = 0;
  for (int64_t b = 0; b < batches; ++b) {
    // Data-parallel rank d reads rows [(b x dp + d) x batch, ... + batch)
    // of the set, as the training batches are laid out.
    for (int64_t row = 0; row < batch; ++row)
      data.sample((b * dp + dpIndex) * batch + row, tokens + row * localSeq,
                  labels + row * localSeq);
    device.copyToDevice(slots.tokens, tokens, bytes);
    device.copyToDevice(slots.labels, labels, bytes);
    device.run(Device::Step::Eval, eval, slots.arena);
    float loss;
    device.copyToHost(&loss, slots.loss, sizeof(loss));
    lossSum += loss;
  }
  // TorchTitan sums the batches' losses, divides by their count and
  // takes the mean over the data-parallel ranks; each compiled loss is
  // already the mean over every rank's rows (equal counts), so the mean
  // over the batches is the same number.
  return {
      lossSum / double(batches), batches, batches * batch * dp * seqLen,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count()};
}
