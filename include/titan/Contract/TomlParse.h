//===- TomlParse.h - toml++ parsing, its hazards checked first --*- C++ -*-===//
//
// For the files that parse TOML (the training config, the model TOML, the
// hardware description): toml++ with TOML_EXCEPTIONS 0, after
// findTomlHazard (TomlHazards.h), whose finding comes back as a
// toml::parse_error at its position, as toml++'s own errors do.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONTRACT_TOMLPARSE_H
#define TITAN_CONTRACT_TOMLPARSE_H

#include "titan/Contract/TomlHazards.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#ifndef TOML_EXCEPTIONS
#define TOML_EXCEPTIONS 0
#endif
#include <toml++/toml.h>

#include <string>
#include <string_view>

namespace titan {

/// toml::parse of `text` (`source` in its regions), after findTomlHazard.
inline toml::parse_result parseTomlChecked(std::string_view text,
                                           std::string_view source) {
  if (std::optional<TomlHazard> hazard =
          findTomlHazard(llvm::StringRef(text.data(), text.size())))
    return toml::parse_result(
        toml::parse_error(std::move(hazard->description),
                          toml::source_position{hazard->line, hazard->column}));
  return toml::parse(text, source);
}

/// parseTomlChecked of the file `path` (its text read whole, as
/// toml::parse_file reads it); the caller checks it is a regular file.
inline toml::parse_result parseTomlFileChecked(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/true);
  std::string source = path.str();
  if (!buffer)
    return toml::parse_result(toml::parse_error("cannot read the file: " +
                                                    buffer.getError().message(),
                                                toml::source_position{1, 1}));
  llvm::StringRef text = (*buffer)->getBuffer();
  return parseTomlChecked(std::string_view(text.data(), text.size()), source);
}

} // namespace titan

#endif // TITAN_CONTRACT_TOMLPARSE_H
