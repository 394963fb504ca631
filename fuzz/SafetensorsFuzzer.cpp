//===- SafetensorsFuzzer.cpp - safetensors files, titan's and HF's --------===//
//
// titan-safetensors-fuzzer: the input is a whole safetensors file (seeds:
// fuzz/seeds, the fuzz model's weights in f32, bf16 and f16, under
// TorchTitan's names as titan's model export and checkpoint shards write
// them and under Hugging Face's). Its length prefix and header are checked
// against the model's tensors under both names, as SafetensorsReader's
// constructor checks a file before it reads any data.
//
//===----------------------------------------------------------------------===//

#include "FuzzSupport.h"
#include "RuntimeModel.h"

#include "HFCheckpoint.h"
#include "SafeTensors.h"

#include <cstring>

using namespace titanrt;

namespace {
/// The fuzz model's tensors under TorchTitan's names and under HF's.
const std::vector<std::vector<TensorRef>> &expectedTensorLists() {
  static const std::vector<std::vector<TensorRef>> lists = [] {
    std::vector<std::vector<TensorRef>> out(2);
    for (const Manifest::Param &p : titan::fuzz::runtimeModel().allParams) {
      out[0].push_back({p.name, p.shape, nullptr});
      out[1].push_back({hfName(p.name), p.shape, nullptr});
    }
    return out;
  }();
  return lists;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  unsigned char lengthBytes[8] = {};
  std::memcpy(lengthBytes, data, std::min<size_t>(size, 8));
  llvm::Expected<uint64_t> headerSize =
      parseSafetensorsHeaderSize(size, lengthBytes, "fuzz.safetensors");
  if (!headerSize) {
    titan::fuzz::expectedRefusal(headerSize.takeError());
    return 0;
  }
  llvm::StringRef header =
      titan::fuzz::asText(data, size).substr(8, *headerSize);
  for (const std::vector<TensorRef> &tensors : expectedTensorLists()) {
    llvm::Expected<std::vector<SafetensorsEntry>> entries =
        parseSafetensorsHeader(header, size, tensors, "fuzz.safetensors");
    if (!entries) {
      titan::fuzz::expectedRefusal(entries.takeError());
      continue;
    }
    // What the reader would read stays inside the file.
    for (auto [entry, t] : llvm::zip(*entries, tensors))
      if (entry.offset < 0 ||
          uint64_t(entry.offset) +
                  uint64_t(t.numel()) *
                      uint64_t(titan::dtypeBytes(entry.dtype)) >
              size)
        std::abort();
  }
  return 0;
}
