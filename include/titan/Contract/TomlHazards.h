//===- TomlHazards.h - what toml++ assumes of its input ---------*- C++ -*-===//
//
// toml++ 3.3 (Debian 12's) asserts, and under clang's __builtin_assume
// assumes, that a table header's first key character is a bare key
// character or a quote: `[?x]` or `[` at the end of a line is undefined
// behaviour there instead of a parse error (fuzzing found it in every TOML
// reader). titan's readers check for it first and report it as toml++
// reports the same mistake elsewhere.
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

/// The first table header in `text` whose key starts with neither a bare
/// key character (A-Z a-z 0-9 _ -) nor a quote. Strings, comments and the
/// brackets of multi-line values are skipped, so only real headers count.
std::optional<TomlHazard> findTomlHazard(llvm::StringRef text);

} // namespace titan

#endif // TITAN_CONTRACT_TOMLHAZARDS_H
