//===- Documents.cpp - the documents of titan-tokenize's inputs -----------===//

#include "Documents.h"

#include "titan/Data/TextSource.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

using titan::data::TextSource;

uint64_t titan::tokenize::inputBytes(llvm::StringRef path) {
  uint64_t total = 0;
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(path, ec), end;
       it != end && !ec; it.increment(ec)) {
    uint64_t size = 0;
    if (!llvm::sys::fs::file_size(it->path(), size))
      total += size;
  }
  uint64_t size = 0;
  if (!llvm::sys::fs::is_directory(path) &&
      !llvm::sys::fs::file_size(path, size))
    total += size;
  return total;
}

llvm::Error titan::tokenize::forEachDocument(
    llvm::StringRef path, bool wholeFile,
    llvm::function_ref<void(llvm::StringRef)> document) {
  if (wholeFile || path == "-") {
    auto buffer =
        llvm::MemoryBuffer::getFileOrSTDIN(path, /*IsText=*/false,
                                           /*RequiresNullTerminator=*/false);
    if (!buffer)
      return llvm::createStringError(buffer.getError(), "%s: cannot read: %s",
                                     path.str().c_str(),
                                     buffer.getError().message().c_str());
    document((*buffer)->getBuffer());
    return llvm::Error::success();
  }
  llvm::Expected<TextSource> source = TextSource::open(path);
  if (!source)
    return source.takeError();
  for (int64_t i = 0; i < source->numDocuments(); ++i) {
    llvm::Expected<std::string> text = source->next();
    if (!text)
      return text.takeError();
    document(*text);
  }
  return llvm::Error::success();
}
