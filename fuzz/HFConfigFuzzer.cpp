//===- HFConfigFuzzer.cpp - a Hugging Face config.json --------------------===//
//
// titan-hf-config-fuzzer: the input is an HF Llama config.json (seeds:
// test/Import/Inputs/*/config.json), read as --model.hf_assets_path and an
// HF checkpoint's import read it.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "titan/Contract/LlamaArgs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = titan::fuzz::writeScratchFile("config.json", data, size);
  llvm::Expected<titan::LlamaArgs> args = titan::readHFLlamaConfig(path);
  if (!args)
    titan::fuzz::expectedRefusal(args.takeError());
  return 0;
}
