//===- Dataset.cpp - token data for training ------------------------------===//

#include "Dataset.h"
#include "Error.h"

#include "llvm/ADT/StringRef.h"

#include <cstring>

using namespace titanrt;

int64_t SequenceShard::position(int64_t t, int64_t seqLen) const {
  if (degree == 1)
    return t;
  int64_t chunk = seqLen / (2 * degree);
  int64_t globalChunk = t < chunk ? rank : 2 * degree - 1 - rank;
  return globalChunk * chunk + t % chunk;
}

Dataset::Dataset(const std::string &path, int64_t vocabSize, int64_t seqLen,
                 SequenceShard shard)
    : path_(path), binary_(llvm::StringRef(path).ends_with(".bin")),
      shard_(shard), vocab_(vocabSize), seqLen_(seqLen) {
  // titan-compile refuses such a sequence length (ConfigFit).
  if (shard.degree > 1 && seqLen % (2 * shard.degree) != 0)
    fatal("corrupt executable: training.seq_len (" + std::to_string(seqLen) +
          ") is not divisible by 2 x the context parallel degree (" +
          std::to_string(shard.degree) + ")");
  if (path.empty())
    fatal("training.dataset_path is not set; give a .bin token file or a "
          "text file");
  requireRegularFile(path, "training.dataset_path");
  // Mapped (LLVM maps files of more than a few pages): the OS reads what
  // the samples touch.
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    fatal("cannot read training.dataset_path '" + path +
          "': " + buffer.getError().message());
  file_ = std::move(*buffer);
  int64_t bytes = int64_t(file_->getBufferSize());
  if (binary_) {
    if (bytes % 4 != 0)
      fatal("token file '" + path + "' is truncated: " + std::to_string(bytes) +
            " bytes is not a whole number of uint32 token ids");
    numTokens_ = bytes / 4;
  } else {
    if (vocabSize < 256)
      fatal("the byte-level tokenizer for text file '" + path +
            "' needs vocab_size >= 256, the model has " +
            std::to_string(vocabSize));
    numTokens_ = bytes;
  }
  numSamples_ = numTokens_ / (seqLen + 1);
  if (numSamples_ == 0)
    fatal("training.dataset_path '" + path + "' holds " +
          std::to_string(numTokens_) + " tokens, fewer than one sample (" +
          std::to_string(seqLen + 1) + " = training.seq_len + 1)");
}

int64_t Dataset::token(int64_t i) const {
  const char *data = file_->getBufferStart();
  if (!binary_)
    return static_cast<unsigned char>(data[i]);
  uint32_t id;
  std::memcpy(&id, data + 4 * i, 4);
  if (id >= uint64_t(vocab_))
    fatal("token file '" + path_ + "': token " + std::to_string(i) +
          " has id " + std::to_string(id) + ", outside the vocabulary [0, " +
          std::to_string(vocab_) + ")");
  return id;
}

void Dataset::sample(int64_t index, int32_t *inputs, int32_t *labels) const {
  int64_t first = (index % numSamples_) * (seqLen_ + 1);
  for (int64_t t = 0, n = localLength(); t < n; ++t) {
    int64_t position = first + shard_.position(t, seqLen_);
    inputs[t] = int32_t(token(position));
    labels[t] = int32_t(token(position + 1));
  }
}
