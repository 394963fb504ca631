//===- TomlHazards.cpp - what toml++ assumes of its input -----------------===//
//
// Two hazards, both found by fuzzing (fuzz/seeds/*/crash-*): a table
// header's first key character (toml++ assumes it is a bare key character
// or a quote), and a non-ASCII character outside strings and comments,
// where toml++ 3.3's is_non_ascii_horizontal_whitespace reaches
// __builtin_unreachable for U+00A1-U+0499 and U+2C8E-U+3087 (fixed in
// 3.4). Valid TOML has neither: its bare keys are ASCII and its whitespace
// is tab and space.
//
//===----------------------------------------------------------------------===//

#include "titan/Contract/TomlHazards.h"

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
      if (c == '"' || c == '\'') {
        skipString(c);
        lineStart = false;
        continue;
      }
      if (c == '[' && lineStart && depth == 0) {
        if (std::optional<TomlHazard> hazard = checkHeader())
          return hazard;
        continue;
      }
      if (uint8_t(c) >= 0x80)
        return hazard("unexpected non-ASCII character (byte " + hex(c) +
                      ") outside a string or a comment");
      lineStart = false;
      if (c == '[' || c == '{')
        ++depth;
      else if ((c == ']' || c == '}') && depth > 0)
        --depth;
      ++at;
    }
    return std::nullopt;
  }

private:
  void newLine() {
    ++at;
    ++line;
    lineBegin = at;
    lineStart = true;
  }

  void skipToLineEnd() {
    while (at < text.size() && text[at] != '\n')
      ++at;
  }

  /// Past a string starting at `at` (a multi-line one spans lines); an
  /// unterminated one ends the scan, toml++ reports it.
  void skipString(char quote) {
    std::string triple(3, quote);
    bool multiLine = text.substr(at).starts_with(triple);
    at += multiLine ? 3 : 1;
    while (at < text.size()) {
      char c = text[at];
      if (c == '\\' && quote == '"') {
        at += 2;
        continue;
      }
      if (multiLine ? text.substr(at).starts_with(triple) : c == quote) {
        at += multiLine ? 3 : 1;
        return;
      }
      if (c == '\n') {
        if (!multiLine)
          return; // toml++ reports the unterminated string
        newLine();
        lineStart = false;
        continue;
      }
      ++at;
    }
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
  int depth = 0;
  bool lineStart = true;
};
} // namespace

std::optional<TomlHazard> titan::findTomlHazard(StringRef text) {
  return Scanner(text).run();
}
