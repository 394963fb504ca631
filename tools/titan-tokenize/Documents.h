//===- Documents.h - the documents of titan-tokenize's inputs ----*- C++
//-*-===//
//
// How titan-tokenize cuts its input files into documents, kept apart from
// the tool so that other text sources (JSON lines) can take its place.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TOOLS_TITAN_TOKENIZE_DOCUMENTS_H
#define TITAN_TOOLS_TITAN_TOKENIZE_DOCUMENTS_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

namespace titan::tokenize {

/// Calls `document` on each document of the text file `path`: the whole
/// file, or with `lines` each line without its '\n' (a last line without
/// one too).
llvm::Error forEachDocument(llvm::StringRef path, bool lines,
                            llvm::function_ref<void(llvm::StringRef)> document);

} // namespace titan::tokenize

#endif // TITAN_TOOLS_TITAN_TOKENIZE_DOCUMENTS_H
