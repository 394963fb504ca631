//===- Documents.h - the documents of titan-tokenize's inputs ---*- C++ -*-===//
//
// How titan-tokenize cuts its inputs into documents: as a training run
// reads them (titan/Data/TextSource.h: JSON lines, text lines, folders), or
// each whole file as one document (what the token-identity tests compare).
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TOOLS_TITAN_TOKENIZE_DOCUMENTS_H
#define TITAN_TOOLS_TITAN_TOKENIZE_DOCUMENTS_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace titan::tokenize {

/// The bytes of `path`'s documents, for the progress bar (0 if unknown).
uint64_t inputBytes(llvm::StringRef path);

/// Calls `document` on each document of `path` ('-': stdin, one document):
/// with `wholeFile` the file itself, else the documents a training run
/// reads from that file or folder.
llvm::Error forEachDocument(llvm::StringRef path, bool wholeFile,
                            llvm::function_ref<void(llvm::StringRef)> document);

} // namespace titan::tokenize

#endif // TITAN_TOOLS_TITAN_TOKENIZE_DOCUMENTS_H
