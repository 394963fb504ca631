//===- TextSource.cpp - the documents of a text dataset -------------------===//

#include "titan/Data/TextSource.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace titan::data;
using llvm::StringRef;

namespace {

llvm::Error error(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// The format of a file found in a dataset folder, or none for a file the
/// folder's dataset does not read.
std::optional<TextSource::Format> formatOf(StringRef path) {
  StringRef ext = llvm::sys::path::extension(path);
  if (ext == ".json" || ext == ".jsonl")
    return TextSource::Format::JsonLines;
  if (ext == ".txt")
    return TextSource::Format::TextLines;
  return std::nullopt;
}

/// `datasets` skips such names when it lists a folder.
bool isHidden(StringRef path) {
  StringRef name = llvm::sys::path::filename(path);
  return name.starts_with(".") || name.starts_with("_");
}

/// A JSON line without content is not a record (pyarrow's reader skips it).
bool isBlank(StringRef line) {
  return line.find_first_not_of(" \t\r") == StringRef::npos;
}

/// The line at `offset` of `data` (without its "\n") and the offset after
/// it.
std::pair<StringRef, size_t> lineAt(StringRef data, size_t offset) {
  size_t end = std::min(data.find('\n', offset), data.size());
  return {data.slice(offset, end), end + 1};
}

int64_t countDocuments(StringRef data, TextSource::Format format) {
  if (format == TextSource::Format::TextLines)
    return int64_t(data.count('\n')) +
           (!data.empty() && !data.ends_with("\n") ? 1 : 0);
  int64_t count = 0;
  for (size_t offset = 0; offset < data.size();) {
    auto [line, next] = lineAt(data, offset);
    count += !isBlank(line);
    offset = next;
  }
  return count;
}

/// The files of `path` with their formats, in reading order.
llvm::Expected<std::vector<std::pair<std::string, TextSource::Format>>>
listFiles(StringRef path) {
  llvm::sys::fs::file_status status;
  if (std::error_code ec = llvm::sys::fs::status(path, status))
    return error("cannot read '" + path + "': " + ec.message());
  std::vector<std::pair<std::string, TextSource::Format>> files;
  if (llvm::sys::fs::is_regular_file(status)) {
    files.push_back(
        {path.str(), formatOf(path).value_or(TextSource::Format::TextLines)});
    return files;
  }
  if (!llvm::sys::fs::is_directory(status))
    return error("'" + path + "' is not a regular file or a folder");
  std::error_code ec;
  for (llvm::sys::fs::recursive_directory_iterator it(path, ec), end;
       it != end && !ec; it.increment(ec)) {
    if (isHidden(it->path())) {
      it.no_push();
      continue;
    }
    std::optional<TextSource::Format> format = formatOf(it->path());
    if (format && llvm::sys::fs::is_regular_file(it->path()))
      files.push_back({it->path(), *format});
  }
  if (ec)
    return error("cannot list folder '" + path + "': " + ec.message());
  if (files.empty())
    return error("folder '" + path +
                 "' holds no dataset files (.json and .jsonl: JSON lines, "
                 ".txt: text lines)");
  llvm::sort(files);
  return files;
}

} // namespace

llvm::Expected<TextSource> TextSource::open(StringRef path) {
  auto listed = listFiles(path);
  if (!listed)
    return listed.takeError();
  TextSource source;
  for (auto &[file, format] : *listed) {
    auto buffer = llvm::MemoryBuffer::getFile(file, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer)
      return error("cannot read '" + file +
                   "': " + buffer.getError().message());
    int64_t count = countDocuments((*buffer)->getBuffer(), format);
    source.numDocuments_ += count;
    source.files_.push_back({file, format, std::move(*buffer), count});
  }
  if (source.numDocuments_ == 0)
    return error("dataset '" + path + "' holds no documents");
  return std::move(source);
}

void TextSource::seek(int64_t index) {
  assert(index >= 0 && index < numDocuments_ && "document out of range");
  file_ = 0;
  document_ = 0;
  while (document_ + files_[file_].numDocuments <= index)
    document_ += files_[file_++].numDocuments;
  offset_ = 0;
  line_ = 1;
  // Past the file's documents before `index`.
  while (document_ < index) {
    auto [line, next] = lineAt(files_[file_].buffer->getBuffer(), offset_);
    offset_ = next;
    ++line_;
    document_ += files_[file_].format == Format::TextLines || !isBlank(line);
  }
}

llvm::Expected<std::string> TextSource::next() {
  while (file_ < files_.size()) {
    const File &file = files_[file_];
    StringRef data = file.buffer->getBuffer();
    if (offset_ >= data.size()) {
      ++file_;
      offset_ = 0;
      line_ = 1;
      continue;
    }
    auto [line, next] = lineAt(data, offset_);
    int64_t lineNumber = line_++;
    offset_ = next;
    auto where = [&] {
      return llvm::formatv("{0}:{1}: ", file.path, lineNumber).str();
    };
    if (file.format == Format::TextLines) {
      ++document_;
      line.consume_back("\r");
      size_t bad = 0;
      if (!llvm::json::isUTF8(line, &bad))
        return error(where() + "not UTF-8 (byte " + llvm::Twine(bad + 1) +
                     " of the line)");
      return line.str();
    }
    if (isBlank(line))
      continue;
    ++document_;
    llvm::Expected<llvm::json::Value> json = llvm::json::parse(line);
    if (!json)
      return error(where() +
                   "not a JSON line: " + llvm::toString(json.takeError()));
    const llvm::json::Object *object = json->getAsObject();
    std::optional<StringRef> text =
        object ? object->getString("text") : std::nullopt;
    if (!text)
      return error(where() + "no \"text\" string in the JSON line");
    return text->str();
  }
  return error("read past the last document of '" + files_.front().path + "'");
}
