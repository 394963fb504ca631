//===- TokenizeFuzzer.cpp - encoding arbitrary bytes ----------------------===//
//
// titan-tokenize-fuzzer: the input is text, any bytes (invalid UTF-8
// included), encoded by the test suite's Llama 3 style tokenizer.json and
// its tiktoken tokenizer.model, as the data loader encodes documents. Every
// id must be in the vocabulary, and (both are byte-level BPEs) decoding the
// ids must give the bytes back.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "titan/Data/Tokenizer.h"

#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <memory>
#include <vector>

namespace {
std::vector<std::unique_ptr<titan::data::Tokenizer>> &tokenizers() {
  static std::vector<std::unique_ptr<titan::data::Tokenizer>> all;
  return all;
}
} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  for (const char *file : {"tokenizer.json", "tokenizer.model"}) {
    std::string path = std::string(TITAN_FUZZ_TOKENIZER_DIR) + "/" + file;
    llvm::Expected<std::unique_ptr<titan::data::Tokenizer>> t =
        titan::data::loadTokenizer(path);
    if (!t) {
      llvm::errs() << "fuzz harness: " << llvm::toString(t.takeError()) << "\n";
      std::abort();
    }
    tokenizers().push_back(std::move(*t));
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text = titan::fuzz::asText(data, size);
  for (const auto &tokenizer : tokenizers()) {
    std::vector<int32_t> ids, always;
    tokenizer->encode(text, /*bos=*/false, /*eos=*/false, ids);
    for (int32_t id : ids)
      if (id < 0 || id >= tokenizer->vocabSize())
        std::abort();
    // A byte-level BPE loses no byte; the ids a post-processor always adds
    // (tokenizer.json's BOS) come first.
    tokenizer->encode("", /*bos=*/false, /*eos=*/false, always);
    if (tokenizer->decode(ids) != tokenizer->decode(always) + text.str())
      std::abort();
  }
  return 0;
}
