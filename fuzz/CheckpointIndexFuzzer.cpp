//===- CheckpointIndexFuzzer.cpp - titan's checkpoint index ---------------===//
//
// titan-checkpoint-index-fuzzer: the input is a checkpoint's index.json
// (seeds: fuzz/seeds, the fuzz model saved by 1 and by 2 ranks), checked
// against the model as a resume checks it before reading any shard.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "RuntimeModel.h"

#include "Checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  titan::fuzz::expectedRefusal(titanrt::checkCheckpointIndex(
      titan::fuzz::asText(data, size), "step-10/index.json",
      titan::fuzz::runtimeModel()));
  return 0;
}
