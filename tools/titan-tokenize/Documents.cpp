//===- Documents.cpp - the documents of titan-tokenize's inputs -----------===//

#include "Documents.h"

#include "llvm/Support/MemoryBuffer.h"

llvm::Error titan::tokenize::forEachDocument(
    llvm::StringRef path, bool lines,
    llvm::function_ref<void(llvm::StringRef)> document) {
  auto buffer =
      llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false,
                                         /*RequiresNullTerminator=*/false);
  if (!buffer)
    return llvm::createStringError(buffer.getError(), "%s: cannot read: %s",
                                   path.str().c_str(),
                                   buffer.getError().message().c_str());
  llvm::StringRef text = (*buffer)->getBuffer();
  if (!lines) {
    document(text);
    return llvm::Error::success();
  }
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    document(line);
    text = rest;
  }
  return llvm::Error::success();
}
