//===- TokenizerTest.cpp - tokenizer files: round trips, BOS/EOS, errors --===//
//
// The test tokenizer (test/Data/Inputs/tokenizer, make_tokenizer.py): 1792
// BPE tokens, then Llama 3's 256 special tokens, <|begin_of_text|> = 1792
// and <|end_of_text|> = 1793. The ids themselves are checked against
// tokenizers and tiktoken by test/Data/tokenizer-identity.test; here what
// those cannot check: bytes that are not UTF-8, TorchTitan's BOS/EOS rule,
// and the errors.
//
//===----------------------------------------------------------------------===//

#include "titan/Data/Tokenizer.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FileUtilities.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

using namespace titan::data;

namespace {

constexpr int32_t kBos = 1792, kEos = 1793;

std::string inputs(llvm::StringRef name) {
  llvm::SmallString<256> path(TITAN_SOURCE_DIR);
  llvm::sys::path::append(path, "test", "Data", "Inputs");
  llvm::sys::path::append(path, "tokenizer", name);
  return path.str().str();
}

std::unique_ptr<Tokenizer> load(llvm::StringRef path) {
  auto tokenizer = loadTokenizer(path);
  EXPECT_TRUE(bool(tokenizer)) << toString(tokenizer.takeError());
  return tokenizer ? std::move(*tokenizer) : nullptr;
}

std::vector<int32_t> encode(const Tokenizer &tokenizer, llvm::StringRef text,
                            bool bos, bool eos) {
  std::vector<int32_t> ids;
  tokenizer.encode(text, bos, eos, ids);
  return ids;
}

/// The error of loading a tokenizer from `text` written to `name`.
std::string loadError(llvm::StringRef name, llvm::StringRef text) {
  llvm::SmallString<128> dir;
  EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("titan-tok", dir));
  llvm::SmallString<128> path(dir);
  llvm::sys::path::append(path, name);
  {
    std::error_code error;
    llvm::raw_fd_ostream os(path, error);
    os << text;
  }
  auto tokenizer = loadTokenizer(path);
  llvm::sys::fs::remove_directories(dir);
  EXPECT_FALSE(bool(tokenizer));
  return tokenizer ? "" : toString(tokenizer.takeError());
}

TEST(Tokenizer, BothFormatsDescribeTheSameVocabulary) {
  for (const char *name : {"tokenizer.json", "tokenizer.model"}) {
    auto tokenizer = load(inputs(name));
    ASSERT_TRUE(tokenizer);
    EXPECT_EQ(tokenizer->vocabSize(), 2048) << name;
    EXPECT_EQ(tokenizer->bosId(), kBos) << name;
    EXPECT_EQ(tokenizer->eosId(), kEos) << name;
  }
  // A folder: tokenizer.json first, as TorchTitan looks.
  auto folder = load(llvm::sys::path::parent_path(inputs("tokenizer.json")));
  ASSERT_TRUE(folder);
  EXPECT_EQ(folder->kind(), "tokenizer.json");
}

TEST(Tokenizer, DecodeGivesBackAnyBytes) {
  const std::string texts[] = {
      "",
      "plain text, 12345 numbers",
      "not UTF-8: \xff\xfe, a lone \x80, a cut \xe4\xb8 and \xf0\x9f",
      "special<|eot_id|>tokens<|begin_of_text|>inside",
      std::string("nul \0 byte", 10),
  };
  for (const char *name : {"tokenizer.json", "tokenizer.model"}) {
    auto tokenizer = load(inputs(name));
    ASSERT_TRUE(tokenizer);
    // tokenizer.json's post-processor starts every text with BOS.
    std::string prefix =
        tokenizer->kind() == "tokenizer.json" ? "<|begin_of_text|>" : "";
    for (const std::string &text : texts)
      EXPECT_EQ(tokenizer->decode(encode(*tokenizer, text, false, false)),
                prefix + text)
          << name;
  }
}

TEST(Tokenizer, BosAndEosAsTorchTitanAddsThem) {
  // TorchTitan's HuggingFaceTokenizer: BOS is not added again where the
  // post-processor adds it, and stays where it does even without add_bos.
  auto json = load(inputs("tokenizer.json"));
  ASSERT_TRUE(json);
  std::vector<int32_t> both = encode(*json, "hello", true, true);
  std::vector<int32_t> none = encode(*json, "hello", false, false);
  ASSERT_GE(none.size(), 2u);
  EXPECT_EQ(none.front(), kBos);
  EXPECT_NE(none[1], kBos);
  EXPECT_NE(none.back(), kEos);
  none.push_back(kEos);
  EXPECT_EQ(both, none);

  // Meta's tiktoken tokenizer adds nothing by itself.
  auto tiktoken = load(inputs("tokenizer.model"));
  ASSERT_TRUE(tiktoken);
  std::vector<int32_t> plain = encode(*tiktoken, "hello", false, false);
  std::vector<int32_t> wrapped = encode(*tiktoken, "hello", true, true);
  ASSERT_EQ(wrapped.size(), plain.size() + 2);
  EXPECT_EQ(wrapped.front(), kBos);
  EXPECT_EQ(wrapped.back(), kEos);
}

TEST(Tokenizer, ErrorsNameTheFileAndTheProblem) {
  auto missing = loadTokenizer("/nonexistent/tokenizer.json");
  ASSERT_FALSE(bool(missing));
  EXPECT_EQ(toString(missing.takeError()),
            "/nonexistent/tokenizer.json: no such tokenizer file or folder");

  EXPECT_NE(
      loadError("tokenizer.json", "{\"model\": [1,")
          .find(
              "tokenizer.json: malformed JSON [1:13, byte=13]: Unexpected EOF"),
      std::string::npos);
  EXPECT_NE(loadError("tokenizer.json",
                      R"({"model": {"type": "WordPiece", "vocab": {}}})")
                .find("tokenizer.json: model: type 'WordPiece' is not "
                      "supported (titan reads BPE models)"),
            std::string::npos);
  EXPECT_NE(loadError("tokenizer.json",
                      R"({"normalizer": {"type": "NFC"}, "model": {}})")
                .find("normalizer: type 'NFC' is not supported"),
            std::string::npos);
  EXPECT_NE(loadError("tokenizer.json",
                      R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1},
                    "merges": [["a", "b"]]}})")
                .find("model.merges[0]: 'a' + 'b' is not in the vocabulary"),
            std::string::npos);
  EXPECT_NE(loadError("tokenizer.json",
                      R"({"model": {"type": "BPE", "vocab": {}, "merges": []},
                          "pre_tokenizer": {"type": "Whitespace"}})")
                .find("pre_tokenizer: type 'Whitespace' is not supported"),
            std::string::npos);
  EXPECT_NE(loadError("tokenizer.model", "IQ== 0\nnot-a-line\n")
                .find("tokenizer.model: 2: expected \"<base64 token> "
                      "<rank>\""),
            std::string::npos);
  // A corrupt id must not size the tables.
  EXPECT_NE(loadError("tokenizer.json",
                      R"({"model": {"type": "BPE", "vocab": {"a": 4000000000},
                          "merges": []}})")
                .find("model.vocab.a: expected an integer id from 0 to "
                      "16777215"),
            std::string::npos);
  EXPECT_NE(loadError("tokenizer.model", "IQ== 4000000000\n")
                .find("tokenizer.model: 1: expected \"<base64 token> "
                      "<rank>\" with a rank from 0 to 16777215"),
            std::string::npos);
  EXPECT_NE(loadError("tokenizer.model", "IQ== 0\n")
                .find("tokenizer.model: byte 0 has no rank"),
            std::string::npos);
}

} // namespace
