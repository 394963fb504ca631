//===- Dataset.h - token data for training ----------------------*- C++ -*-===//

#ifndef TITANRT_LIB_DATASET_H
#define TITANRT_LIB_DATASET_H

#include <cstdint>
#include <string>
#include <vector>

namespace titanrt {

/// The token stream of `training.dataset_path`: a `.bin` file of
/// little-endian uint32 token ids, or any other file read as text and
/// tokenized bytewise (token id = byte value; needs vocab >= 256).
class Dataset {
public:
  Dataset(const std::string &path, int64_t vocabSize, int64_t seqLen);

  /// Whole samples of seqLen + 1 tokens in the stream.
  int64_t numSamples() const { return numSamples_; }

  /// Copies sample `index` (modulo numSamples()): inputs are its first
  /// seqLen tokens, labels its last seqLen.
  void sample(int64_t index, int32_t *inputs, int32_t *labels) const;

private:
  std::vector<int32_t> tokens_;
  int64_t seqLen_;
  int64_t numSamples_;
};

} // namespace titanrt

#endif // TITANRT_LIB_DATASET_H
