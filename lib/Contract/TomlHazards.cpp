//===- TomlHazards.cpp - what toml++ assumes of its input -----------------===//
//
// Four hazards, all found by fuzzing (fuzz/seeds/*/crash-*): a table
// header's first key character (toml++ assumes it is a bare key character
// or a quote); a non-ASCII character outside strings and comments, where
// toml++ 3.3's is_non_ascii_horizontal_whitespace reaches
// __builtin_unreachable for U+00A1-U+0499, U+2C8E-U+3087 and
// U+FB36-U+FEFE (fixed in 3.4); one of those right after the whitespace a
// multi-line string's line-ending backslash trims; and a `}` where an
// array expects a value (parse_value assumes it is not a value
// terminator). Valid TOML has none of the first, second and fourth (bare
// keys are ASCII, whitespace is tab and space, `}` closes only inline
// tables); the third is valid but needs a rare character at a rare place.
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/TomlHazards.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"

using namespace titan;
using llvm::StringRef;

namespace {
bool isBareKeyCharacter(char c) {
  return llvm::isAlnum(c) || c == '_' || c == '-';
}

/// A scan of a TOML document that knows where a line starts at the top
/// level (outside strings, comments and the brackets of values).
class Scanner {
public:
  explicit Scanner(StringRef text) : text(text) {}

  std::optional<TomlHazard> run() {
    if (text.starts_with("\xEF\xBB\xBF")) // a UTF-8 byte order mark
      at = 3;
    while (at < text.size()) {
      char c = text[at];
      if (c == '\n') {
        newLine();
        continue;
      }
      if (c == ' ' || c == '\t' || c == '\r') {
        ++at;
        continue;
      }
      if (c == '#') {
        skipToLineEnd();
        continue;
      }
      // A quote opens a string only where a key or a value starts: inside
      // a bare value toml++ reads it as part of that token.
      if ((c == '"' || c == '\'') && expect != Expect::Rest) {
        if (std::optional<TomlHazard> hazard = skipString(c))
          return hazard;
        lineStart = false;
        if (expect == Expect::Value)
          expect = Expect::Rest;
        continue;
      }
      if (c == '[' && lineStart && open.empty()) {
        if (std::optional<TomlHazard> hazard = checkHeader())
          return hazard;
        continue;
      }
      if (std::optional<TomlHazard> hazard = checkValueCharacter(c))
        return hazard;
      lineStart = false;
      step(c);
      ++at;
    }
    return std::nullopt;
  }

private:
  /// Where the scan is in TOML's grammar: where a key starts (a line, an
  /// inline table's entry), where a value starts (after `=`, in an array),
  /// or in or after a value.
  enum class Expect { Key, Value, Rest };

  /// The grammar's next state after `c`, outside strings and comments.
  void step(char c) {
    char inner = open.empty() ? '\0' : open.back();
    switch (c) {
    case '=':
      if (expect == Expect::Key)
        expect = Expect::Value;
      return;
    case ',':
      if (inner)
        expect = inner == '[' ? Expect::Value : Expect::Key;
      return;
    case '[':
    case '{':
      if (expect == Expect::Value) {
        open.push_back(c);
        expect = c == '[' ? Expect::Value : Expect::Key;
      }
      return;
    case ']':
    case '}':
      if (inner == (c == ']' ? '[' : '{')) {
        open.pop_back();
        expect = Expect::Rest;
      }
      return;
    default:
      if (expect == Expect::Value)
        expect = Expect::Rest; // a bare value: a number, a date, a boolean
    }
  }

  void newLine() {
    ++at;
    ++line;
    lineBegin = at;
    lineStart = true;
    // Outside brackets a line starts a key.
    if (open.empty())
      expect = Expect::Key;
  }

  /// A character outside strings and comments that toml++ 3.3 would not
  /// check: any non-ASCII one (is_non_ascii_horizontal_whitespace reaches
  /// __builtin_unreachable for some), and a `}` directly in an array, where
  /// parse_array hands it to parse_value, which assumes no value
  /// terminator.
  std::optional<TomlHazard> checkValueCharacter(char c) const {
    if (uint8_t(c) >= 0x80)
      return hazard("unexpected non-ASCII character (byte " + hex(c) +
                    ") outside a string or a comment");
    if (c == '}' && !open.empty() && open.back() == '[')
      return hazard("expected value or closing ']', saw '}'");
    return std::nullopt;
  }

  void skipToLineEnd() {
    while (at < text.size() && text[at] != '\n')
      ++at;
  }

  /// Past a string starting at `at` (a multi-line one spans lines); an
  /// unterminated one ends the scan, toml++ reports it. The one hazard
  /// inside: after a multi-line basic string's line-ending backslash,
  /// toml++ asks each character whether it is whitespace.
  std::optional<TomlHazard> skipString(char quote) {
    std::string triple(3, quote);
    bool multiLine = text.substr(at).starts_with(triple);
    at += multiLine ? 3 : 1;
    while (at < text.size()) {
      char c = text[at];
      if (c == '\\' && quote == '"') {
        ++at;
        if (!multiLine) {
          ++at; // the escaped character
          continue;
        }
        if (std::optional<TomlHazard> hazard = skipEscape())
          return hazard;
        continue;
      }
      if (multiLine ? text.substr(at).starts_with(triple) : c == quote) {
        at += multiLine ? 3 : 1;
        // Up to two more quotes belong to the multi-line string ("""" ends
        // one whose last character is a quote), as TOML and toml++ read it.
        for (int extra = 0;
             multiLine && extra < 2 && at < text.size() && text[at] == quote;
             ++extra)
          ++at;
        return std::nullopt;
      }
      if (c == '\n') {
        if (!multiLine)
          return std::nullopt; // toml++ reports the unterminated string
        newLine();
        lineStart = false;
        continue;
      }
      ++at;
    }
    return std::nullopt;
  }

  /// The code point at `at` and its length in bytes (a malformed sequence
  /// counts as one byte; toml++ refuses it).
  std::pair<uint32_t, size_t> codePoint() const {
    auto byte = [&](size_t i) {
      return at + i < text.size() ? uint8_t(text[at + i]) : uint8_t(0);
    };
    uint8_t b = byte(0);
    if (b >= 0xC2 && b <= 0xDF)
      return {(uint32_t(b & 0x1F) << 6) | (byte(1) & 0x3F), 2};
    if (b >= 0xE0 && b <= 0xEF)
      return {(uint32_t(b & 0x0F) << 12) | (uint32_t(byte(1) & 0x3F) << 6) |
                  (byte(2) & 0x3F),
              3};
    if (b >= 0xF0 && b <= 0xF4)
      return {0x10000, 4};
    return {b, 1};
  }

  /// What toml++ 3.3's is_non_ascii_horizontal_whitespace answers for a
  /// non-ASCII code point, or nullopt where it reaches
  /// __builtin_unreachable (U+00A1-U+0499, U+2C8E-U+3087 but U+3000,
  /// U+FB36-U+FEFE).
  static std::optional<bool> tomlppWhitespace(uint32_t cp) {
    if ((cp >= 0xA1 && cp <= 0x499) ||
        (cp >= 0x2C8E && cp <= 0x3087 && cp != 0x3000) ||
        (cp >= 0xFB36 && cp <= 0xFEFE))
      return std::nullopt;
    return cp == 0xA0 || cp == 0x1680 || cp == 0x180E ||
           (cp >= 0x2000 && cp <= 0x200B) || cp == 0x202F ||
           (cp >= 0x205F && cp <= 0x2060) || cp == 0x3000 || cp == 0xFEFF;
  }

  /// Past the escape after a multi-line basic string's backslash: toml++
  /// asks whether its character is whitespace and, for a line-ending
  /// backslash, every character it trims after it up to the next other one.
  std::optional<TomlHazard> skipEscape() {
    for (bool first = true; at < text.size(); first = false) {
      auto [cp, length] = codePoint();
      std::optional<bool> space = cp < 0x80
                                      ? std::optional<bool>(isSpace(char(cp)))
                                      : tomlppWhitespace(cp);
      if (!space)
        return hazard("unsupported character U+" +
                      llvm::utohexstr(cp, /*LowerCase=*/false, 4) +
                      " after a backslash in a multi-line string (toml++ "
                      "cannot tell whether it is whitespace)");
      if (!*space) {
        if (first)
          at += length; // an ordinary escape's character
        return std::nullopt;
      }
      if (cp == '\n') {
        newLine();
        lineStart = false;
      } else {
        at += length;
      }
    }
    return std::nullopt;
  }

  static bool isSpace(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
  }

  /// A header's `[` or `[[` at `at`: its key must start with a bare key
  /// character or a quote (toml++ itself reports `[]` and `[` at the end).
  std::optional<TomlHazard> checkHeader() {
    size_t key = at + 1;
    if (key < text.size() && text[key] == '[')
      ++key;
    while (key < text.size() && (text[key] == ' ' || text[key] == '\t'))
      ++key;
    lineStart = false;
    expect = Expect::Key;
    at = key;
    if (key >= text.size() || text[key] == ']')
      return std::nullopt;
    char c = text[key];
    if (isBareKeyCharacter(c) || c == '"' || c == '\'')
      return std::nullopt;
    return hazard(
        "expected bare key starting character or string "
        "delimiter, saw '" +
        (llvm::isPrint(c) ? std::string(1, c) : "\\x" + hex(c).substr(2)) +
        "'");
  }

  static std::string hex(char c) {
    return "0x" + llvm::utohexstr(uint8_t(c), /*LowerCase=*/true, 2);
  }

  TomlHazard hazard(std::string description) const {
    return {line, unsigned(at - lineBegin + 1), std::move(description)};
  }

  StringRef text;
  size_t at = 0, lineBegin = 0;
  unsigned line = 1;
  /// The brackets of the values around `at`, innermost last.
  std::string open;
  Expect expect = Expect::Key;
  bool lineStart = true;
};
} // namespace

std::optional<TomlHazard> titan::findTomlHazard(StringRef text) {
  return Scanner(text).run();
}
