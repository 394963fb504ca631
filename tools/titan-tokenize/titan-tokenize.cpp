//===- titan-tokenize.cpp - a text corpus to a .bin token file ------------===//
//
// Pre-tokenizes a text dataset (JSON lines, text lines, or a folder of them:
// titan/Data/TextSource.h) into the .bin file training.dataset_path reads:
// little-endian uint32 ids, each document as BOS + tokens + EOS, in the
// order a single data-parallel rank reads the text. Training one rank on
// the .bin reads the same samples as on the text, without tokenizing
// during the run. A progress bar on stderr shows documents, tokens and
// tokens/s.
//
//===----------------------------------------------------------------------===//

#include "titan/Data/TextSource.h"
#include "titan/Data/Tokenizer.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/EndianStream.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <vector>

using namespace llvm;
using titan::data::TextSource;
using titan::data::Tokenizer;

static cl::opt<std::string> input(cl::Positional, cl::Required,
                                  cl::desc("<dataset file or folder>"));
static cl::opt<std::string> output("o", cl::Required,
                                   cl::desc("the .bin file to write"),
                                   cl::value_desc("file"));
static cl::opt<std::string>
    tokenizerPath("tokenizer",
                  cl::desc("tokenizer.json, tokenizer.model or a folder "
                           "holding one (default: titan's byte tokenizer)"),
                  cl::value_desc("path"));

namespace {

[[noreturn]] void fail(const Twine &message) {
  WithColor::error(errs(), "titan-tokenize") << message << "\n";
  std::exit(1);
}

/// One line on stderr, redrawn in place on a terminal (every 5% elsewhere).
class Progress {
public:
  explicit Progress(int64_t total)
      : total_(total), start_(std::chrono::steady_clock::now()),
        terminal_(sys::Process::StandardErrIsDisplayed()) {}

  void update(int64_t done, int64_t tokens) {
    auto now = std::chrono::steady_clock::now();
    bool last = done == total_;
    if (!last && now - shown_ < std::chrono::milliseconds(200))
      return;
    int64_t percent = done * 100 / total_;
    if (!terminal_ && !last && percent < shownPercent_ + 5)
      return;
    shown_ = now;
    shownPercent_ = percent;
    double seconds = std::chrono::duration<double>(now - start_).count();
    constexpr int width = 30;
    int64_t filled = done * width / total_;
    errs() << (terminal_ ? "\r" : "") << "[" << std::string(size_t(filled), '#')
           << std::string(size_t(width - filled), ' ') << "] "
           << format("%3lld%% %lld/%lld documents, %lld tokens, %.0f tokens/s",
                     (long long)percent, (long long)done, (long long)total_,
                     (long long)tokens, seconds > 0 ? tokens / seconds : 0.0)
           << (terminal_ && !last ? "" : "\n");
  }

private:
  int64_t total_, shownPercent_ = -5;
  std::chrono::steady_clock::time_point start_, shown_;
  bool terminal_;
};

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::ParseCommandLineOptions(
      argc, argv,
      "titan-tokenize: a text dataset to a .bin token file for "
      "training.dataset_path\n");
  Expected<TextSource> source = TextSource::open(input);
  if (!source)
    fail(toString(source.takeError()));
  std::unique_ptr<Tokenizer> tokenizer;
  if (tokenizerPath.empty()) {
    tokenizer = titan::data::createByteTokenizer();
  } else {
    auto loaded = titan::data::loadTokenizer(tokenizerPath);
    if (!loaded)
      fail(toString(loaded.takeError()));
    tokenizer = std::move(*loaded);
  }
  std::error_code ec;
  raw_fd_ostream out(output, ec, sys::fs::OF_None);
  if (ec)
    fail("cannot write '" + output + "': " + ec.message());

  Progress progress(source->numDocuments());
  std::vector<int32_t> ids;
  int64_t tokens = 0;
  for (int64_t d = 0, n = source->numDocuments(); d < n; ++d) {
    Expected<std::string> text = source->next();
    if (!text)
      fail(toString(text.takeError()));
    ids.clear();
    tokenizer->encode(*text, /*bos=*/true, /*eos=*/true, ids);
    for (int32_t id : ids)
      support::endian::write(out, uint32_t(id), llvm::endianness::little);
    tokens += int64_t(ids.size());
    progress.update(d + 1, tokens);
  }
  out.close();
  if (out.has_error())
    fail("cannot write '" + output + "': " + out.error().message());
  outs() << "wrote " << tokens << " tokens of " << source->numDocuments()
         << " documents (" << tokenizer->kind() << " tokenizer, "
         << tokenizer->vocabSize() << " ids) to " << output << "\n";
  return 0;
}
