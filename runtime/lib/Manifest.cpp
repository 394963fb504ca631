//===- Manifest.cpp - what titan-compile says about an executable ---------===//

#include "Manifest.h"
#include "Error.h"

using namespace titanrt;

int64_t titanrt::numel(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

Manifest titanrt::parseManifest(const char *text) {
  llvm::Expected<Manifest> m = titan::manifest::parseManifest(text);
  if (m)
    return std::move(*m);
  // An executable of another runtime ABI is not corrupt: say so plainly.
  std::string message = llvm::toString(m.takeError());
  if (std::optional<std::string> abi =
          titan::manifest::abiVersionMismatch(text))
    fatal(*abi);
  fatal("corrupt executable: " + message);
}
