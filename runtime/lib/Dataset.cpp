//===- Dataset.cpp - token data for training ------------------------------===//

#include "Dataset.h"
#include "Error.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace titanrt;

Dataset::Dataset(const std::string &path, int64_t vocabSize, int64_t seqLen)
    : seqLen_(seqLen) {
  if (path.empty())
    fatal("training.dataset_path is not set; give a .bin token file or a "
          "text file");
  requireRegularFile(path, "training.dataset_path");
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    fatal("cannot read training.dataset_path '" + path +
          "': " + buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (llvm::StringRef(path).ends_with(".bin")) {
    if (bytes.size() % 4 != 0)
      fatal("token file '" + path +
            "' is truncated: " + std::to_string(bytes.size()) +
            " bytes is not a whole number of uint32 token ids");
    tokens_.resize(bytes.size() / 4);
    for (size_t i = 0; i < tokens_.size(); ++i) {
      uint32_t id;
      std::memcpy(&id, bytes.data() + 4 * i, 4);
      if (id >= uint64_t(vocabSize))
        fatal("token file '" + path + "': token " + std::to_string(i) +
              " has id " + std::to_string(id) +
              ", outside the vocabulary [0, " + std::to_string(vocabSize) +
              ")");
      tokens_[i] = int32_t(id);
    }
  } else {
    if (vocabSize < 256)
      fatal("the byte-level tokenizer for text file '" + path +
            "' needs vocab_size >= 256, the model has " +
            std::to_string(vocabSize));
    tokens_.reserve(bytes.size());
    for (unsigned char c : bytes)
      tokens_.push_back(c);
  }
  numSamples_ = int64_t(tokens_.size()) / (seqLen + 1);
  if (numSamples_ == 0)
    fatal("training.dataset_path '" + path + "' holds " +
          std::to_string(tokens_.size()) + " tokens, fewer than one sample (" +
          std::to_string(seqLen + 1) + " = training.seq_len + 1)");
}

void Dataset::sample(int64_t index, int32_t *inputs, int32_t *labels) const {
  const int32_t *s = tokens_.data() + (index % numSamples_) * (seqLen_ + 1);
  std::memcpy(inputs, s, seqLen_ * sizeof(int32_t));
  std::memcpy(labels, s + 1, seqLen_ * sizeof(int32_t));
}
