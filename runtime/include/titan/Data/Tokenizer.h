//===- Tokenizer.h - text to token ids, as TorchTitan's tokenizer -*- C++
//-*-===//
//
// The tokenizers a TorchTitan job names through model.hf_assets_path (or
// the deprecated model.tokenizer_path): a Hugging Face `tokenizer.json`
// (byte-level BPE, Llama 3's split regex through PCRE2, merges, added and
// special tokens) or a tiktoken `tokenizer.model` (Llama 3's original
// format). Both give the ids the `tokenizers` and `tiktoken` packages give;
// BOS and EOS are added as TorchTitan's HuggingFaceTokenizer adds them.
// Without either file, titan's byte tokenizer (id = byte value).
// MLIR-free: the runtime and titan-tokenize link it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DATA_TOKENIZER_H
#define TITAN_DATA_TOKENIZER_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace titan::data {

class Tokenizer {
public:
  virtual ~Tokenizer();

  /// Appends the ids of `text` to `ids`, with BOS before and EOS after when
  /// asked and the tokenizer has them. As TorchTitan's HuggingFaceTokenizer:
  /// a tokenizer.json post-processor's own ids (Llama 3's BOS) are always
  /// there, and BOS/EOS are not added a second time.
  virtual void encode(llvm::StringRef text, bool bos, bool eos,
                      std::vector<int32_t> &ids) const = 0;

  /// The text of `ids` (special tokens included), for tests and tools.
  virtual std::string decode(llvm::ArrayRef<int32_t> ids) const = 0;

  /// One more than the largest id it produces.
  virtual int64_t vocabSize() const = 0;
  virtual std::optional<int32_t> bosId() const = 0;
  virtual std::optional<int32_t> eosId() const = 0;
  /// "bytes", "tokenizer.json" or "tiktoken", for logs.
  virtual llvm::StringRef kind() const = 0;
};

/// The tokenizer of `path`: a `tokenizer.json` or tiktoken
/// `tokenizer.model` file, or a folder holding one (tokenizer.json first,
/// as TorchTitan looks). The error names the file and what is wrong.
llvm::Expected<std::unique_ptr<Tokenizer>> loadTokenizer(llvm::StringRef path);

/// titan's byte tokenizer: id = byte value, no BOS or EOS.
std::unique_ptr<Tokenizer> createByteTokenizer();

} // namespace titan::data

#endif // TITAN_DATA_TOKENIZER_H
