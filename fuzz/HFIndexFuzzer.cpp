//===- HFIndexFuzzer.cpp - a Hugging Face model.safetensors.index.json ----===//
//
// titan-hf-index-fuzzer: the input is an HF checkpoint's index (seed:
// fuzz/seeds, the fuzz model in two files), read against the model as
// checkpoint.initial_load_in_hf reads it.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "RuntimeModel.h"

#include "HFCheckpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::Expected<titanrt::HFWeightMap> map = titanrt::parseHFWeightMap(
      titan::fuzz::asText(data, size), "model.safetensors.index.json",
      titan::fuzz::runtimeModel());
  if (!map)
    titan::fuzz::expectedRefusal(map.takeError());
  return 0;
}
