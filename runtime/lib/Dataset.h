//===- Dataset.h - token data for training ----------------------*- C++ -*-===//

#ifndef TITANRT_LIB_DATASET_H
#define TITANRT_LIB_DATASET_H

#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>

namespace titanrt {

/// Context parallel's load-balanced split of a sequence (TorchTitan
/// v0.2.0): the sequence is cut into 2 x degree chunks and cp rank `rank`
/// holds chunks rank and 2 x degree - 1 - rank, in that order. Under the
/// causal mask an early chunk attends to few tokens and a late one to many,
/// so every rank gets the same share of attention's work. Tokens and labels
/// are split alike; degree 1 holds the whole sequence.
struct SequenceShard {
  int64_t degree = 1, rank = 0;

  /// The tokens a rank holds of a sequence of `seqLen`.
  int64_t length(int64_t seqLen) const { return seqLen / degree; }
  /// The sequence position of the rank's token `t` (t < length(seqLen)).
  int64_t position(int64_t t, int64_t seqLen) const;
};

/// The token stream of `training.dataset_path`: a `.bin` file of
/// little-endian uint32 token ids, or any other file read as text and
/// tokenized bytewise (token id = byte value; needs vocab >= 256). The file
/// is mapped, not read: a rank touches only the samples it trains on, and
/// each sample's ids are checked against the vocabulary when it is read.
class Dataset {
public:
  /// Samples are `seqLen` tokens long (the global sequence length); the
  /// rank reads its `shard` of each.
  Dataset(const std::string &path, int64_t vocabSize, int64_t seqLen,
          SequenceShard shard = {});

  /// Whole samples of seqLen + 1 tokens in the stream.
  int64_t numSamples() const { return numSamples_; }

  /// The tokens sample() copies: the shard's length of the sequence.
  int64_t localLength() const { return shard_.length(seqLen_); }

  /// Copies the shard of sample `index` (modulo numSamples()): inputs are
  /// its first seqLen tokens, labels its last seqLen (each localLength()
  /// tokens, in the shard's order).
  void sample(int64_t index, int32_t *inputs, int32_t *labels) const;

private:
  /// Token `i` of the stream.
  int64_t token(int64_t i) const;

  std::string path_;
  std::unique_ptr<llvm::MemoryBuffer> file_;
  bool binary_;
  SequenceShard shard_;
  int64_t vocab_, seqLen_, numTokens_, numSamples_;
};

} // namespace titanrt

#endif // TITANRT_LIB_DATASET_H
