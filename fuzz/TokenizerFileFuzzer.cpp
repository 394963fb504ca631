//===- TokenizerFileFuzzer.cpp - tokenizer.json and tokenizer.model -------===//
//
// titan-tokenizer-json-fuzzer and titan-tokenizer-model-fuzzer (this file,
// built twice with TITAN_FUZZ_TOKENIZER_FILE naming the file): the input is
// a tokenizer file (seeds: small tokenizers cut from test/Data/Inputs'),
// loaded as training.hf_assets_path loads it; one that loads then encodes
// and decodes a fixed multilingual text with and without BOS/EOS.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "titan/Data/Tokenizer.h"

#include <cstdlib>

#ifndef TITAN_FUZZ_TOKENIZER_FILE
#error "TITAN_FUZZ_TOKENIZER_FILE names the file: tokenizer.json or .model"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path =
      titan::fuzz::writeScratchFile(TITAN_FUZZ_TOKENIZER_FILE, data, size);
  llvm::Expected<std::unique_ptr<titan::data::Tokenizer>> tokenizer =
      titan::data::loadTokenizer(path);
  if (!tokenizer) {
    titan::fuzz::expectedRefusal(tokenizer.takeError());
    return 0;
  }
  std::vector<int32_t> ids;
  (*tokenizer)
      ->encode("Hello, world! 1234 ünïcödé 日本語 \t\n  x", true, true, ids);
  for (int32_t id : ids)
    if (id < 0 || id >= (*tokenizer)->vocabSize())
      std::abort(); // an id the model's embedding cannot hold
  (void)(*tokenizer)->decode(ids);
  return 0;
}
