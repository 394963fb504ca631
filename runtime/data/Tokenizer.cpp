//===- Tokenizer.cpp - text to token ids ----------------------------------===//

#include "titan/Data/Tokenizer.h"

#include "BPE.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace titan::data;
using llvm::StringRef;

Tokenizer::~Tokenizer() = default;

namespace {

/// id = byte value: what titan trained on before it read tokenizer files.
class ByteTokenizer final : public Tokenizer {
public:
  void encode(StringRef text, bool, bool,
              std::vector<int32_t> &ids) const override {
    for (unsigned char c : text)
      ids.push_back(c);
  }
  std::string decode(llvm::ArrayRef<int32_t> ids) const override {
    std::string text;
    for (int32_t id : ids)
      text.push_back(static_cast<char>(id));
    return text;
  }
  int64_t vocabSize() const override { return 256; }
  std::optional<int32_t> bosId() const override { return std::nullopt; }
  std::optional<int32_t> eosId() const override { return std::nullopt; }
  StringRef kind() const override { return "bytes"; }
};

} // namespace

std::unique_ptr<Tokenizer> titan::data::createByteTokenizer() {
  return std::make_unique<ByteTokenizer>();
}

llvm::Expected<std::unique_ptr<Tokenizer>>
titan::data::loadTokenizer(StringRef path) {
  using detail::fileError;
  if (!llvm::sys::fs::exists(path))
    return fileError(path, "no such tokenizer file or folder");
  if (llvm::sys::fs::is_directory(path)) {
    // TorchTitan looks for tokenizer.json first.
    for (StringRef name : {"tokenizer.json", "tokenizer.model"}) {
      llvm::SmallString<256> file(path);
      llvm::sys::path::append(file, name);
      if (llvm::sys::fs::exists(file))
        return loadTokenizer(file);
    }
    return fileError(path, "holds neither tokenizer.json nor tokenizer.model");
  }
  if (llvm::sys::path::extension(path) == ".json")
    return detail::loadHFTokenizer(path);
  return detail::loadTiktokenTokenizer(path);
}
