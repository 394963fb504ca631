//===- Suggest.cpp - "did you mean ...?" for near misses ------------------===//

#include "titan/Support/Suggest.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>

llvm::StringRef
titan::closestMatch(llvm::StringRef name,
                    llvm::ArrayRef<llvm::StringRef> candidates) {
  llvm::StringRef best;
  unsigned bestDist = std::max<unsigned>(2, name.size() / 3) + 1;
  for (llvm::StringRef c : candidates) {
    unsigned d = name.edit_distance(c, /*AllowReplacements=*/true, bestDist);
    if (d < bestDist) {
      bestDist = d;
      best = c;
    }
  }
  return best;
}

std::string titan::didYouMean(llvm::StringRef name,
                              llvm::ArrayRef<llvm::StringRef> candidates) {
  llvm::StringRef best = closestMatch(name, candidates);
  if (best.empty())
    return "";
  return (llvm::Twine("; did you mean '") + best + "'?").str();
}
