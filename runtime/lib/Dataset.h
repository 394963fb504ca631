//===- Dataset.h - token data for training ----------------------*- C++ -*-===//

#ifndef TITANRT_LIB_DATASET_H
#define TITANRT_LIB_DATASET_H

#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace titanrt {

/// The token stream of `training.dataset_path`: a `.bin` file of
/// little-endian uint32 token ids, or any other file read as text and
/// tokenized bytewise (token id = byte value; needs vocab >= 256). The file
/// is mapped, not read: a rank touches only the samples it trains on, and
/// each sample's ids are checked against the vocabulary when it is read.
class Dataset {
public:
  Dataset(const std::string &path, int64_t vocabSize, int64_t seqLen);

  /// Whole samples of seqLen + 1 tokens in the stream.
  int64_t numSamples() const { return numSamples_; }

  /// Copies sample `index` (modulo numSamples()): inputs are its first
  /// seqLen tokens, labels its last seqLen.
  void sample(int64_t index, int32_t *inputs, int32_t *labels) const;

private:
  /// Token `i` of the stream.
  int64_t token(int64_t i) const;

  std::string path_;
  std::unique_ptr<llvm::MemoryBuffer> file_;
  bool binary_;
  int64_t vocab_, seqLen_, numTokens_, numSamples_;
};

} // namespace titanrt

#endif // TITANRT_LIB_DATASET_H
