//===- BPE.cpp - byte-level BPE shared by tokenizer.json and tiktoken -----===//

#include "BPE.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/ErrorHandling.h"

#include <mutex>
#include <queue>

using namespace titan::data;
using namespace titan::data::detail;
using llvm::StringRef;

llvm::Error detail::fileError(StringRef path, const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 path + ": " + message);
}

//===----------------------------------------------------------------------===//
// SplitRegex
//===----------------------------------------------------------------------===//

llvm::Expected<SplitRegex> SplitRegex::compile(StringRef pattern,
                                               StringRef what) {
  int code = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code *compiled = pcre2_compile(
      reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &offset, nullptr);
  if (!compiled) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(code, message, sizeof(message));
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "%s: PCRE2 cannot compile %s at "
                                   "offset %zu: %s",
                                   what.str().c_str(), pattern.str().c_str(),
                                   size_t(offset),
                                   reinterpret_cast<const char *>(message));
  }
  // Without a JIT (some architectures), pcre2_match interprets: slower, same
  // matches.
  pcre2_jit_compile(compiled, PCRE2_JIT_COMPLETE);
  SplitRegex regex;
  regex.code.reset(compiled, pcre2_code_free);
  return regex;
}

void SplitRegex::split(StringRef text,
                       llvm::function_ref<void(StringRef)> piece) const {
  std::unique_ptr<pcre2_match_data, void (*)(pcre2_match_data *)> match(
      pcre2_match_data_create_from_pattern(code.get(), nullptr),
      pcre2_match_data_free);
  auto subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t gap = 0, from = 0;
  while (from < text.size()) {
    int rc = pcre2_match(code.get(), subject, text.size(), from, 0, match.get(),
                         nullptr);
    if (rc == PCRE2_ERROR_NOMATCH)
      break;
    if (rc < 0) {
      // A resource limit (match limit, JIT stack, memory): splitting the
      // rest some other way would silently change the ids.
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(rc, message, sizeof(message));
      llvm::report_fatal_error(
          llvm::Twine("tokenizer: the split regex failed at byte ") +
          llvm::Twine(from) + ": " + reinterpret_cast<const char *>(message));
    }
    PCRE2_SIZE *range = pcre2_get_ovector_pointer(match.get());
    if (range[0] == range[1]) {
      // An empty match splits nothing: go on from the next character.
      from = range[1] + 1;
      while (from < text.size() && (text[from] & 0xC0) == 0x80)
        ++from;
      continue;
    }
    if (range[0] > gap)
      piece(text.slice(gap, range[0]));
    piece(text.slice(range[0], range[1]));
    gap = from = range[1];
  }
  if (gap < text.size())
    piece(text.substr(gap));
}

//===----------------------------------------------------------------------===//
// AddedTokens
//===----------------------------------------------------------------------===//

void AddedTokens::add(StringRef content, int32_t id) {
  if (content.empty())
    return;
  auto &tokens = byFirstByte[static_cast<uint8_t>(content[0])];
  auto same =
      llvm::find_if(tokens, [&](auto &t) { return t.first == content; });
  if (same != tokens.end()) {
    same->second = id;
    return;
  }
  tokens.emplace_back(content.str(), id);
  llvm::stable_sort(
      tokens, [](auto &a, auto &b) { return a.first.size() > b.first.size(); });
  ++count;
}

void AddedTokens::split(StringRef text,
                        llvm::function_ref<void(StringRef)> onText,
                        llvm::function_ref<void(int32_t)> onToken) const {
  size_t start = 0;
  for (size_t i = 0; i < text.size();) {
    StringRef rest = text.substr(i);
    const auto &tokens = byFirstByte[static_cast<uint8_t>(text[i])];
    auto hit = llvm::find_if(
        tokens, [&](auto &t) { return rest.starts_with(t.first); });
    if (hit == tokens.end()) {
      ++i;
      continue;
    }
    if (i > start)
      onText(text.slice(start, i));
    onToken(hit->second);
    i += hit->first.size();
    start = i;
  }
  if (start < text.size())
    onText(text.substr(start));
}

//===----------------------------------------------------------------------===//
// Byte-level alphabet
//===----------------------------------------------------------------------===//

namespace {
/// GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves,
/// the other 68 are written as U+0100 onwards, in byte order.
struct ByteLevelAlphabet {
  std::array<std::string, 256> charOf;
  std::array<int16_t, 324> byteOf;
  ByteLevelAlphabet() {
    byteOf.fill(-1);
    uint32_t next = 256;
    for (unsigned b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                       (b >= 0xAE && b <= 0xFF);
      uint32_t c = printable ? b : next++;
      byteOf[c] = b;
      char utf8[UNI_MAX_UTF8_BYTES_PER_CODE_POINT];
      char *end = utf8;
      llvm::ConvertCodePointToUTF8(c, end);
      charOf[b].assign(utf8, end);
    }
  }
};
const ByteLevelAlphabet &alphabet() {
  static const ByteLevelAlphabet table;
  return table;
}
} // namespace

StringRef detail::byteLevelChar(uint8_t byte) {
  return alphabet().charOf[byte];
}

std::optional<std::string> detail::fromByteLevel(StringRef text) {
  std::string bytes;
  auto *cursor = reinterpret_cast<const llvm::UTF8 *>(text.begin());
  auto *end = reinterpret_cast<const llvm::UTF8 *>(text.end());
  while (cursor < end) {
    llvm::UTF32 c;
    if (llvm::convertUTF8Sequence(&cursor, end, &c, llvm::strictConversion) !=
            llvm::conversionOK ||
        c >= alphabet().byteOf.size() || alphabet().byteOf[c] < 0)
      return std::nullopt;
    bytes.push_back(static_cast<char>(alphabet().byteOf[c]));
  }
  return bytes;
}

//===----------------------------------------------------------------------===//
// The tokenizer
//===----------------------------------------------------------------------===//

namespace {

class BPETokenizer final : public Tokenizer {
public:
  explicit BPETokenizer(BPEModel model) : m(std::move(model)) {}

  void encode(StringRef text, bool bos, bool eos,
              std::vector<int32_t> &ids) const override {
    if (bos && !m.addsBos && m.bos)
      ids.push_back(*m.bos);
    ids.insert(ids.end(), m.prefix.begin(), m.prefix.end());
    encodeAdded(0, text, ids);
    ids.insert(ids.end(), m.suffix.begin(), m.suffix.end());
    if (eos && !m.addsEos && m.eos)
      ids.push_back(*m.eos);
  }

  std::string decode(llvm::ArrayRef<int32_t> ids) const override {
    std::string text;
    for (int32_t id : ids)
      if (id >= 0 && size_t(id) < m.idBytes.size())
        text += m.idBytes[id];
    return text;
  }

  int64_t vocabSize() const override { return m.idBytes.size(); }
  std::optional<int32_t> bosId() const override { return m.bos; }
  std::optional<int32_t> eosId() const override { return m.eos; }
  StringRef kind() const override { return m.kind; }

private:
  /// Pieces up to this many bytes are cached: words repeat, and their merges
  /// cost far more than a hash look-up.
  static constexpr size_t kCachedPieceBytes = 64;
  static constexpr size_t kCacheEntries = 1 << 16;

  void encodeAdded(size_t pass, StringRef text,
                   std::vector<int32_t> &ids) const {
    if (pass == m.added.size())
      return encodeText(text, ids);
    m.added[pass].split(
        text, [&](StringRef rest) { encodeAdded(pass + 1, rest, ids); },
        [&](int32_t id) { ids.push_back(id); });
  }

  void encodeText(StringRef text, std::vector<int32_t> &ids) const {
    if (!m.split)
      return encodePiece(text, ids);
    m.split->split(text, [&](StringRef piece) { encodePiece(piece, ids); });
  }

  void encodePiece(StringRef piece, std::vector<int32_t> &ids) const {
    if (m.wholePieces) {
      auto whole = m.bytesToId.find(piece);
      if (whole != m.bytesToId.end())
        return ids.push_back(whole->second);
    }
    bool cached = piece.size() <= kCachedPieceBytes;
    if (cached) {
      std::lock_guard<std::mutex> lock(cacheMutex);
      auto hit = cache.find(piece);
      if (hit != cache.end()) {
        ids.insert(ids.end(), hit->second.begin(), hit->second.end());
        return;
      }
    }
    size_t first = ids.size();
    merge(piece, ids);
    if (cached) {
      std::lock_guard<std::mutex> lock(cacheMutex);
      if (cache.size() >= kCacheEntries)
        cache.clear();
      cache.try_emplace(piece, ids.begin() + first, ids.end());
    }
  }

  /// The merged id and rank of two adjacent symbols, if they merge.
  struct Merge {
    uint32_t rank;
    int32_t pos;
    int32_t id;
  };
  struct Symbol {
    int32_t id, prev, next;
    uint32_t begin, end;
    bool removed;
  };

  std::optional<Merge> mergeOf(StringRef piece, const Symbol &left,
                               const Symbol &right, int32_t pos) const {
    if (m.rule == MergeRule::PairRank) {
      auto it = m.pairMerges.find(uint64_t(uint32_t(left.id)) << 32 |
                                  uint32_t(right.id));
      if (it == m.pairMerges.end())
        return std::nullopt;
      return Merge{it->second.first, pos, it->second.second};
    }
    auto it = m.bytesToId.find(piece.slice(left.begin, right.end));
    if (it == m.bytesToId.end())
      return std::nullopt;
    return Merge{uint32_t(it->second), pos, it->second};
  }

  /// Merges the piece's bytes, the lowest-ranked adjacent pair first and the
  /// leftmost among equals: tokenizers' Word::merge_all, step for step
  /// (stale queue entries are skipped when the pair now merges into another
  /// id). For tiktoken the same loop gives _byte_pair_merge's result, whose
  /// linear scans pick the same leftmost lowest pair.
  void merge(StringRef piece, std::vector<int32_t> &ids) const {
    llvm::SmallVector<Symbol, 32> symbols;
    for (uint32_t i = 0; i < piece.size(); ++i) {
      int32_t id = m.byteIds[static_cast<uint8_t>(piece[i])];
      if (id < 0)
        continue;
      int32_t index = symbols.size();
      symbols.push_back({id, index - 1, index + 1, i, i + 1, false});
    }
    if (symbols.empty())
      return;
    symbols.back().next = -1;

    auto later = [](const Merge &a, const Merge &b) {
      return a.rank != b.rank ? a.rank > b.rank : a.pos > b.pos;
    };
    std::priority_queue<Merge, llvm::SmallVector<Merge, 32>, decltype(later)>
        queue(later);
    for (int32_t i = 0; i + 1 < int32_t(symbols.size()); ++i)
      if (auto pair = mergeOf(piece, symbols[i], symbols[i + 1], i))
        queue.push(*pair);

    while (!queue.empty()) {
      Merge top = queue.top();
      queue.pop();
      Symbol &left = symbols[top.pos];
      if (left.removed || left.next < 0)
        continue;
      Symbol &right = symbols[left.next];
      auto current = mergeOf(piece, left, right, top.pos);
      if (!current || current->id != top.id)
        continue;
      left.id = top.id;
      left.end = right.end;
      left.next = right.next;
      right.removed = true;
      if (left.next >= 0)
        symbols[left.next].prev = top.pos;
      if (left.prev >= 0)
        if (auto pair = mergeOf(piece, symbols[left.prev], left, left.prev))
          queue.push(*pair);
      if (left.next >= 0)
        if (auto pair = mergeOf(piece, left, symbols[left.next], top.pos))
          queue.push(*pair);
    }
    for (const Symbol &symbol : symbols)
      if (!symbol.removed)
        ids.push_back(symbol.id);
  }

  BPEModel m;
  mutable std::mutex cacheMutex;
  mutable llvm::StringMap<std::vector<int32_t>> cache;
};

} // namespace

std::unique_ptr<Tokenizer> detail::createBPETokenizer(BPEModel model) {
  return std::make_unique<BPETokenizer>(std::move(model));
}
