//===- Suggest.h - "did you mean ...?" for near misses ----------*- C++ -*-===//

#ifndef TITAN_SUPPORT_SUGGEST_H
#define TITAN_SUPPORT_SUGGEST_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>

namespace titan {

/// The candidate closest to `name` by edit distance, if it is close enough to
/// be a typo (at most max(2, |name|/3) edits); otherwise an empty string.
llvm::StringRef closestMatch(llvm::StringRef name,
                             llvm::ArrayRef<llvm::StringRef> candidates);

/// "; did you mean '<match>'?" for the closest match, or "".
std::string didYouMean(llvm::StringRef name,
                       llvm::ArrayRef<llvm::StringRef> candidates);

} // namespace titan

#endif // TITAN_SUPPORT_SUGGEST_H
