//===- ModelTomlFuzzer.cpp - a model flavor's TOML ------------------------===//
//
// titan-model-toml-fuzzer: the input is a model TOML with TorchTitan's
// TransformerModelArgs keys (seeds: models/llama3/*.toml), read as
// --model.flavor reads a file.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"

#include "titan/Contract/LlamaArgs.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = titan::fuzz::writeScratchFile("model.toml", data, size);
  llvm::Expected<titan::LlamaArgs> args = titan::readLlamaToml(path);
  if (!args)
    titan::fuzz::expectedRefusal(args.takeError());
  return 0;
}
