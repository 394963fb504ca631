//===- TomlHazards.h - what toml++ assumes of its input ---------*- C++ -*-===//
//
// toml++ 3.3 (Debian 12's) asserts or assumes what it does not check in a
// few places (a table header's first key character, a `}` where an array
// expects a value), and its is_non_ascii_horizontal_whitespace reaches
// __builtin_unreachable for some code points: undefined behaviour on
// malformed input instead of a parse error (fuzzing found each in every
// TOML reader; TomlHazards.cpp lists them). titan's readers check for them
// first and report them as toml++ reports its own errors.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONTRACT_TOMLHAZARDS_H
#define TITAN_CONTRACT_TOMLHAZARDS_H

#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace titan {

/// A place in a TOML document that toml++ would not check, and what is
/// wrong there.
struct TomlHazard {
  unsigned line = 0, column = 0; ///< 1-based, as toml++'s source positions
  std::string description;
};

/// The first place in `text` where toml++ would meet one of them. The scan
/// knows strings, comments and the brackets of values, so valid TOML has
/// none (but a multi-line string whose line-ending backslash trims up to one
/// of the code points toml++ cannot classify).
std::optional<TomlHazard> findTomlHazard(llvm::StringRef text);

} // namespace titan

#endif // TITAN_CONTRACT_TOMLHAZARDS_H
