//===- TiktokenTokenizer.cpp - Llama 3's original tokenizer.model ---------===//
//
// Meta's Llama 3 tokenizer (llama3/tokenizer.py): tiktoken's mergeable ranks,
// one "<base64 bytes> <rank>" line per token, Llama 3's split regex, and 256
// special tokens numbered from the number of ranks on.
//
//===----------------------------------------------------------------------===//

#include "BPE.h"

#include "llvm/Support/Base64.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace titan::data;
using namespace titan::data::detail;
using llvm::StringRef;
using llvm::Twine;

namespace {

/// Llama 3's pre-tokenizer regex (Meta's tokenizer.py pat_str; the same
/// pattern as its tokenizer.json's Split).
constexpr StringRef kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

constexpr int kNumSpecialTokens = 256;

/// Meta's special tokens in id order: ten named ones (with reserved 0-4
/// among them), then reserved 5 to 250.
std::vector<std::string> llama3SpecialTokens() {
  std::vector<std::string> tokens = {
      "<|begin_of_text|>",
      "<|end_of_text|>",
      "<|reserved_special_token_0|>",
      "<|reserved_special_token_1|>",
      "<|reserved_special_token_2|>",
      "<|reserved_special_token_3|>",
      "<|start_header_id|>",
      "<|end_header_id|>",
      "<|reserved_special_token_4|>",
      "<|eot_id|>",
  };
  for (int i = 5; i < kNumSpecialTokens - 5; ++i)
    tokens.push_back(("<|reserved_special_token_" + Twine(i) + "|>").str());
  return tokens;
}

} // namespace

llvm::Expected<std::unique_ptr<Tokenizer>>
detail::loadTiktokenTokenizer(StringRef modelPath) {
  auto buffer = llvm::MemoryBuffer::getFile(modelPath);
  if (!buffer)
    return fileError(modelPath, "cannot read: " + buffer.getError().message());
  BPEModel model;
  model.kind = "tiktoken";
  model.rule = MergeRule::BytesRank;
  model.wholePieces = true;

  StringRef rest = (*buffer)->getBuffer();
  for (size_t line = 1; !rest.empty(); ++line) {
    StringRef text;
    std::tie(text, rest) = rest.split('\n');
    if (text.trim().empty())
      continue;
    auto [encoded, rankText] = text.split(' ');
    std::vector<char> bytes;
    uint32_t rank;
    if (rankText.trim().getAsInteger(10, rank) || rank > kMaxTokenId)
      return fileError(modelPath, Twine(line) +
                                      ": expected \"<base64 token> <rank>\" "
                                      "with a rank from 0 to " +
                                      Twine(kMaxTokenId));
    if (auto error = llvm::decodeBase64(encoded, bytes))
      return fileError(modelPath,
                       Twine(line) + ": " + toString(std::move(error)));
    StringRef token(bytes.data(), bytes.size());
    if (!model.bytesToId.try_emplace(token, rank).second)
      return fileError(modelPath, Twine(line) + ": a second rank for token '" +
                                      encoded + "'");
    if (model.idBytes.size() <= rank)
      model.idBytes.resize(rank + 1);
    model.idBytes[rank] = token.str();
  }
  for (unsigned b = 0; b < 256; ++b) {
    auto it = model.bytesToId.find(StringRef(reinterpret_cast<char *>(&b), 1));
    if (it == model.bytesToId.end())
      return fileError(modelPath, "byte " + Twine(b) + " has no rank");
    model.byteIds[b] = it->second;
  }

  // Meta numbers the special tokens from len(mergeable_ranks) on.
  int32_t next = model.bytesToId.size();
  AddedTokens &specials = model.added.emplace_back();
  for (const std::string &token : llama3SpecialTokens()) {
    specials.add(token, next);
    if (model.idBytes.size() <= size_t(next))
      model.idBytes.resize(next + 1);
    model.idBytes[next++] = token;
  }
  model.bos = model.bytesToId.size();
  model.eos = model.bytesToId.size() + 1;
  auto split = SplitRegex::compile(kLlama3Pattern, "Llama 3's regex");
  if (!split)
    return split.takeError();
  model.split = std::move(*split);
  return createBPETokenizer(std::move(model));
}
