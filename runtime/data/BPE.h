//===- BPE.h - byte-level BPE shared by tokenizer.json and tiktoken -------===//
//
// Both file formats describe the same machine: added (special) tokens cut
// out of the raw text first, a split regex (Llama 3's, through PCRE2) cutting
// the rest into pieces, and a byte-pair merge of each piece's bytes. They
// differ only in how the merge picks the next pair: tokenizers by the rank of
// the merge rule of the two ids, tiktoken by the rank of the merged bytes.
// The loaders (HFTokenizer.cpp, TiktokenTokenizer.cpp) fill a BPEModel;
// createBPETokenizer runs it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_RUNTIME_DATA_BPE_H
#define TITAN_RUNTIME_DATA_BPE_H

#include "titan/Data/Tokenizer.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/FunctionExtras.h"
#include "llvm/ADT/StringMap.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <memory>

namespace titan::data::detail {

/// A pre-tokenizer regex compiled by PCRE2 with UTF and UCP (so \p{L}, \s
/// and (?i) mean what they mean to tokenizers' Oniguruma and tiktoken's
/// fancy-regex), JIT-compiled where PCRE2 has a JIT. Invalid UTF-8 never
/// matches (PCRE2_MATCH_INVALID_UTF): such bytes fall into the gaps and are
/// still encoded, byte by byte.
class SplitRegex {
public:
  /// `what` names the pattern's origin in the error.
  static llvm::Expected<SplitRegex> compile(llvm::StringRef pattern,
                                            llvm::StringRef what);

  /// Calls `piece` on each match of the regex in `text` and on each
  /// non-empty gap between matches, in order (tokenizers' Split with
  /// behavior "Isolated"; tiktoken's find_iter over a regex that matches
  /// everything).
  void split(llvm::StringRef text,
             llvm::function_ref<void(llvm::StringRef)> piece) const;

private:
  std::shared_ptr<pcre2_code> code;
};

/// Tokens found in the raw text before the split regex runs. At each
/// position the longest token wins, the leftmost position first: tokenizers'
/// LeftmostLongest matching (tiktoken's special tokens never overlap, so it
/// gives the same).
class AddedTokens {
public:
  void add(llvm::StringRef content, int32_t id);
  bool empty() const { return count == 0; }

  /// Calls `onText` on the (possibly empty-free) text between tokens and
  /// `onToken` on each token's id, in order.
  void split(llvm::StringRef text,
             llvm::function_ref<void(llvm::StringRef)> onText,
             llvm::function_ref<void(int32_t)> onToken) const;

private:
  /// Per first byte, the tokens starting with it, longest first.
  std::array<std::vector<std::pair<std::string, int32_t>>, 256> byFirstByte;
  size_t count = 0;
};

/// How the merge loop picks the next adjacent pair.
enum class MergeRule {
  /// tokenizers' BPE: the pair of ids with the lowest merge-rule rank.
  PairRank,
  /// tiktoken: the pair whose concatenated bytes have the lowest rank.
  BytesRank,
};

/// The largest id a tokenizer file may give (ids index tables: a corrupt
/// file must not make them gigabytes). 16 Mi: a hundred times Llama 3's.
constexpr int64_t kMaxTokenId = (1 << 24) - 1;

/// Everything a byte-level BPE tokenizer needs; see the loaders.
struct BPEModel {
  llvm::StringRef kind;
  MergeRule rule = MergeRule::PairRank;
  /// The bytes of every id (added tokens included), for decoding.
  std::vector<std::string> idBytes;
  /// Regular tokens by their bytes: the ranks of BytesRank, and the
  /// whole-piece lookup of `wholePieces`.
  llvm::StringMap<int32_t> bytesToId;
  /// A piece that is itself a token is emitted whole (tiktoken always;
  /// tokenizers with `ignore_merges`, as Llama 3's tokenizer.json sets).
  bool wholePieces = false;
  /// PairRank: the id of each single byte (-1: none, the byte is dropped as
  /// tokenizers drops characters it has no id for without an unk token).
  std::array<int32_t, 256> byteIds;
  /// PairRank: (left id << 32 | right id) -> (rule rank, merged id).
  llvm::DenseMap<uint64_t, std::pair<uint32_t, int32_t>> pairMerges;
  /// Added-token passes, run in order on the text between earlier matches
  /// (tokenizers: non-normalized tokens, then normalized ones).
  std::vector<AddedTokens> added;
  std::optional<SplitRegex> split;
  /// The post-processor's ids around the text's (tokenizers'
  /// TemplateProcessing "single" template).
  std::vector<int32_t> prefix, suffix;
  std::optional<int32_t> bos, eos;
  /// The post-processor itself adds BOS/EOS, so encode's flags do not add
  /// them again (TorchTitan's hf_adds_bos/hf_adds_eos).
  bool addsBos = false, addsEos = false;
};

std::unique_ptr<Tokenizer> createBPETokenizer(BPEModel model);

/// GPT-2's byte-level alphabet: the character (UTF-8) each byte is written
/// as in a tokenizer.json vocabulary.
llvm::StringRef byteLevelChar(uint8_t byte);
/// The bytes a byte-level string stands for; std::nullopt when it holds a
/// character outside the alphabet.
std::optional<std::string> fromByteLevel(llvm::StringRef text);

/// "`path`: `message`" as an llvm::Error.
llvm::Error fileError(llvm::StringRef path, const llvm::Twine &message);

llvm::Expected<std::unique_ptr<Tokenizer>>
loadHFTokenizer(llvm::StringRef jsonPath);
llvm::Expected<std::unique_ptr<Tokenizer>>
loadTiktokenTokenizer(llvm::StringRef modelPath);

} // namespace titan::data::detail

#endif // TITAN_RUNTIME_DATA_BPE_H
