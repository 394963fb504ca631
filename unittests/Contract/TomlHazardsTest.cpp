//===- TomlHazardsTest.cpp - what toml++ assumes of its input -------------===//

#include "titan/Contract/TomlHazards.h"

#include "gtest/gtest.h"

using namespace titan;

namespace {
std::string hazardAt(llvm::StringRef text) {
  std::optional<TomlHazard> h = findTomlHazard(text);
  return h ? std::to_string(h->line) + ":" + std::to_string(h->column) + " " +
                 h->description
           : "";
}
} // namespace

// The inputs fuzzing found (fuzz/seeds/*/crash-table-header-*): a header
// whose key starts with another character.
TEST(TomlHazards, HeaderKeyStartingWithAnotherCharacter) {
  EXPECT_EQ(hazardAt("[job]\n[?ptimizer]\nname = 1\n"),
            "2:2 expected bare key starting character or string delimiter, "
            "saw '?'");
  EXPECT_EQ(hazardAt("[@hardwa[hardware]\n"),
            "1:2 expected bare key starting character or string delimiter, "
            "saw '@'");
  EXPECT_EQ(hazardAt("x = 1\n  [[ \x01a]]\n").substr(0, 4), "2:6 ");
  EXPECT_NE(hazardAt("[\n"), ""); // a header cut at the line's end
}

// toml++ 3.3 reaches __builtin_unreachable when it asks whether U+00A1 to
// U+0499 or U+2C8E to U+3087 is whitespace, which it does outside strings
// and comments; valid TOML has no non-ASCII there (fuzz/seeds/*/crash-
// non-ascii-*).
TEST(TomlHazards, NonAsciiOutsideStringsAndComments) {
  EXPECT_EQ(hazardAt("[job]\nx = 1\xc3\xa9\n"),
            "2:6 unexpected non-ASCII character (byte 0xc3) outside a string "
            "or a comment");
  EXPECT_NE(hazardAt("n\xc3\xa9 = 1\n"), "");
  EXPECT_EQ(hazardAt("\xef\xbb\xbf[job] # caf\xc3\xa9\nx = \"\xc3\xa9\"\n"
                     "y = '''\n\xe6\x97\xa5\n'''\n"),
            "");
  // Up to two quotes after a multi-line string's closing three are its
  // content: what follows them is outside the string
  // (fuzz/seeds/config/crash-quote-after-multiline-close.toml).
  EXPECT_EQ(hazardAt("x = \"\"\"a\"\"\"\"\xef\xb9\xbf\n"),
            "1:13 unexpected non-ASCII character (byte 0xef) outside a string "
            "or a comment");
  EXPECT_EQ(hazardAt("x = \"\"\"a\"\"\"\"\"\n"), "");
}

// A quote inside another token opens no string (toml++ reads on), and a
// `}` in an array is handed to toml++'s parse_value, which assumes it is
// not there (fuzz/seeds/model-toml/crash-brace-in-array.toml).
TEST(TomlHazards, StrayQuotesAndBraces) {
  EXPECT_NE(hazardAt("x = 155'5 {\xcf\x91\n"), "");
  EXPECT_NE(hazardAt("x = 1==y'\xc3\xbf'\n"), "");
  EXPECT_NE(hazardAt("x = [1, 2'\xc3\xbf']\n"), "");
  EXPECT_EQ(hazardAt("x = [[}]]\n"),
            "1:7 expected value or closing ']', saw '}'");
  EXPECT_EQ(hazardAt("x = [\"a\", 'b', {c = \"}\"}]\ny = {a.\"b\" = [1]}\n"),
            "");
}

// After a line-ending backslash toml++ asks the next characters whether
// they are whitespace; the code points it cannot classify are refused,
// others (and other strings) pass (fuzz/seeds/*/crash-line-ending-*).
TEST(TomlHazards, LineEndingBackslash) {
  EXPECT_EQ(hazardAt("s = \"\"\"a \\\n\n  \xef\xb9\xbf\"\"\"\n"),
            "3:3 unsupported character U+FE7F after a backslash in a "
            "multi-line string (toml++ cannot tell whether it is whitespace)");
  EXPECT_NE(hazardAt("s = \"\"\"\\ \xc3\xa9\"\"\"\n"), "");
  // The character right after any backslash, and past toml++'s own
  // non-ASCII whitespace (U+FEFF) in the trimming.
  EXPECT_NE(hazardAt("s = \"\"\"\\\\\\\xef\xb9\xbf\"\"\"\n"), "");
  EXPECT_NE(hazardAt("s = \"\"\"\\\n\xef\xbb\xbf\xef\xb9\xbf\"\"\"\n"), "");
  EXPECT_EQ(hazardAt("s = \"\"\"a \\\n  \xe6\x97\xa5 \\t\"\"\"\n"
                     "t = '''\\\n\xc3\xa9'''\nu = \"\\\\\xc3\xa9\"\n"),
            "");
}

// Valid headers, and brackets that are not headers, are left to toml++.
TEST(TomlHazards, OnlyRealHeaders) {
  EXPECT_EQ(hazardAt("[job]\n[\"quoted key\"]\n['literal']\n[[arr]]\n"
                     "[ spaced . dotted ]\n[]\n"),
            "");
  // Lines of multi-line arrays and inline tables start with brackets too.
  EXPECT_EQ(hazardAt("x = [\n  [1, 2],\n  [{a = 1}],\n]\ny = { z = [\n[#]]}\n"),
            "");
  // Strings and comments may hold anything.
  EXPECT_EQ(
      hazardAt("s = \"\"\"\n[?x]\n\"\"\"\nt = '[?'\n# [?\nu = \"\\\"[?\"\n"),
      "");
  // After a multi-line string the next line is a header again.
  EXPECT_NE(hazardAt("s = '''\n'''\n[?x]\n"), "");
}
