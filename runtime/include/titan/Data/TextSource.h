//===- TextSource.h - the documents of a text dataset -----------*- C++ -*-===//
//
// The documents of a text dataset as Hugging Face's `datasets` builders
// read them for TorchTitan's HuggingFaceDataset (load_dataset(path,
// split="train")):
//
//   *.json, *.jsonl  JSON lines (the `json` builder): each non-blank line
//                    is one JSON object whose "text" string is a document;
//   *.txt            text lines (the `text` builder): each line is one
//                    document, without its line break ("\n" or "\r\n");
//   a folder         its files of those extensions, recursively, in sorted
//                    path order (files and folders whose names start with
//                    "." or "_" are skipped, as `datasets` skips them).
//
// A single file of another extension is read as text lines. Files are
// mapped, and only their line breaks are counted upfront (to number the
// documents and split them among data-parallel ranks); a document is parsed
// when it is read. MLIR-free: the runtime and titan-tokenize link it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_DATA_TEXTSOURCE_H
#define TITAN_DATA_TEXTSOURCE_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace titan::data {

class TextSource {
public:
  enum class Format { JsonLines, TextLines };

  struct File {
    std::string path;
    Format format;
    std::unique_ptr<llvm::MemoryBuffer> buffer;
    int64_t numDocuments;
  };

  /// The documents of `path` (a file or a folder). The error names the path
  /// and the problem: nothing there, a folder without readable files, or no
  /// documents at all.
  static llvm::Expected<TextSource> open(llvm::StringRef path);

  int64_t numDocuments() const { return numDocuments_; }
  llvm::ArrayRef<File> files() const { return files_; }

  /// Moves the reader to document `index` (< numDocuments()).
  void seek(int64_t index);
  /// The text of the document at the reader, then moves past it. The error
  /// names the file and line: a JSON line that is not an object with a
  /// "text" string, or a line that is not UTF-8.
  llvm::Expected<std::string> next();

private:
  TextSource() = default;

  std::vector<File> files_;
  int64_t numDocuments_ = 0;
  /// The reader: the file, its byte offset and line number (from 1), and
  /// the document index there.
  size_t file_ = 0;
  size_t offset_ = 0;
  int64_t line_ = 1, document_ = 0;
};

} // namespace titan::data

#endif // TITAN_DATA_TEXTSOURCE_H
