//===- titan-tokenize.cpp - pre-tokenize text into titan's .bin files -----===//
//
// Encodes text datasets (JSON lines, text lines, folders of them:
// titan/Data/TextSource.h) with a tokenizer.json or tokenizer.model (default:
// titan's byte tokenizer), as the training run would: either prints the ids of
// each document (one line per document, the tokenizer's own ids without
// TorchTitan's BOS/EOS: what `tokenizers` and `tiktoken` give, for comparing
// with them) or writes a .bin of little-endian uint32 ids, BOS + ids + EOS per
// document, which the runtime's dataset reads.
//
//===----------------------------------------------------------------------===//

#include "Documents.h"

#include "titan/Data/Tokenizer.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/EndianStream.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>

using namespace llvm;
using Clock = std::chrono::steady_clock;

namespace {

cl::OptionCategory category("titan-tokenize options");
cl::opt<std::string> tokenizerPath(
    "tokenizer", cl::cat(category), cl::value_desc("path"),
    cl::desc("tokenizer.json, tokenizer.model, or a folder holding one "
             "(default: titan's byte tokenizer)"));
cl::opt<bool> printIds("print-ids", cl::cat(category),
                       cl::desc("Print each document's ids on one line"));
cl::opt<std::string> outputPath(
    "o", cl::cat(category), cl::value_desc("out.bin"),
    cl::desc("Write BOS + ids + EOS per document as little-endian uint32"));
cl::opt<bool> wholeFiles(
    "whole-files", cl::cat(category),
    cl::desc("Each file is one document (default: the documents a training "
             "run reads: JSON lines' \"text\", or one per line)"));
cl::opt<bool> progress("progress", cl::cat(category),
                       cl::desc("Show progress on stderr even when it is not "
                                "a terminal"));
cl::list<std::string> inputs(cl::Positional, cl::OneOrMore, cl::cat(category),
                             cl::desc("<dataset files or folders ('-': "
                                      "stdin)>"));

/// Bytes done of the total, tokens and tokens per second of encoding, on
/// one redrawn stderr line.
class Progress {
public:
  Progress(uint64_t totalBytes, bool shown) : total(totalBytes), shown(shown) {}

  void add(uint64_t bytes, uint64_t newTokens, Clock::duration took) {
    done += bytes;
    textBytes += bytes;
    tokens += newTokens;
    encoding += took;
    if (shown && Clock::now() - lastDrawn > std::chrono::milliseconds(100))
      draw();
  }

  void finish(uint64_t documents) {
    if (shown) {
      // Done counts documents' text, which is less than their files' bytes
      // (JSON syntax, line breaks): the last bar is the whole input.
      done = std::max(done, total);
      draw();
      errs() << "\n";
    }
    errs() << formatv("titan-tokenize: {0} documents, {1} tokens, {2} bytes: "
                      "{3:f0} tokens/s encoding\n",
                      documents, tokens, textBytes, tokensPerSecond());
  }

private:
  double tokensPerSecond() const {
    double seconds = std::chrono::duration<double>(encoding).count();
    return seconds > 0 ? tokens / seconds : 0;
  }

  void draw() {
    lastDrawn = Clock::now();
    constexpr int width = 30;
    int filled = total ? int(width * std::min(1.0, double(done) / total)) : 0;
    errs() << formatv("\r[{0}{1}] {2:f1}/{3:f1} MiB {4} tokens {5:f0} "
                      "tokens/s",
                      std::string(filled, '#'),
                      std::string(width - filled, '.'), done / 1048576.0,
                      total / 1048576.0, tokens, tokensPerSecond());
  }

  uint64_t total, done = 0, textBytes = 0, tokens = 0;
  bool shown;
  Clock::duration encoding{};
  Clock::time_point lastDrawn{};
};

Error run() {
  if (printIds == !outputPath.empty())
    return createStringError(inconvertibleErrorCode(),
                             "give one of --print-ids and -o");
  Expected<std::unique_ptr<titan::data::Tokenizer>> tokenizer =
      tokenizerPath.empty() ? Expected<std::unique_ptr<titan::data::Tokenizer>>(
                                  titan::data::createByteTokenizer())
                            : titan::data::loadTokenizer(tokenizerPath);
  if (!tokenizer)
    return tokenizer.takeError();

  std::unique_ptr<raw_fd_ostream> file;
  if (!outputPath.empty()) {
    std::error_code error;
    file = std::make_unique<raw_fd_ostream>(outputPath, error);
    if (error)
      return createStringError(error, "%s: %s", outputPath.c_str(),
                               error.message().c_str());
  }
  uint64_t totalBytes = 0;
  for (const std::string &input : inputs)
    totalBytes += titan::tokenize::inputBytes(input);
  Progress bar(totalBytes, progress || sys::Process::StandardErrIsDisplayed());

  uint64_t documents = 0;
  std::vector<int32_t> ids;
  for (const std::string &input : inputs) {
    auto encodeDocument = [&](StringRef text) {
      ids.clear();
      Clock::time_point start = Clock::now();
      (*tokenizer)
          ->encode(text, /*bos=*/file != nullptr,
                   /*eos=*/file != nullptr, ids);
      bar.add(text.size(), ids.size(), Clock::now() - start);
      ++documents;
      if (file) {
        for (int32_t id : ids)
          support::endian::write<uint32_t>(*file, id, endianness::little);
        return;
      }
      ListSeparator space(" ");
      for (int32_t id : ids)
        outs() << space << id;
      outs() << '\n';
    };
    if (Error error =
            titan::tokenize::forEachDocument(input, wholeFiles, encodeDocument))
      return error;
  }
  bar.finish(documents);
  if (file) {
    file->close();
    if (file->has_error())
      return createStringError(file->error(), "%s: %s", outputPath.c_str(),
                               file->error().message().c_str());
  }
  return Error::success();
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "titan-tokenize: text files to token ids, as a titan training run "
      "tokenizes them\n");
  if (Error error = run()) {
    WithColor::error(errs(), "titan-tokenize")
        << toString(std::move(error)) << "\n";
    return 1;
  }
  return 0;
}
