//===- Dataset.cpp - token data for training ------------------------------===//

#include "Dataset.h"
#include "Error.h"

#include "titan/Contract/TrainConfig.h"
#include "titan/Data/TextSource.h"
#include "titan/Data/Tokenizer.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <deque>
#include <vector>

using namespace titanrt;
using llvm::StringRef;
using titan::data::TextSource;
using titan::data::Tokenizer;

int64_t SequenceShard::position(int64_t t, int64_t seqLen) const {
  if (degree == 1)
    return t;
  return split().globalPosition(rank, t, seqLen / split().numChunks());
}

Dataset::~Dataset() = default;

namespace {

/// A `.bin` file of uint32 token ids, mapped, not read: a rank touches only
/// the samples it trains on, and each sample's ids are checked against the
/// vocabulary when it is read.
class TokenFile final : public Dataset {
public:
  TokenFile(const DataOptions &o);

  std::string describe() const override {
    return llvm::formatv("{0} ({1} samples)", path_, numSamples_).str();
  }
  bool sample(int64_t index, int32_t *inputs, int32_t *labels,
              int32_t *wholeInputs) override {
    if (!loop_ && index >= numSamples_)
      return false;
    int64_t first = (index % numSamples_) * (seqLen_ + 1);
    copyShard([&](int64_t t) { return token(first + t); }, inputs, labels,
              wholeInputs);
    return true;
  }
  // The position is the sample index itself.
  void resume(int64_t, std::optional<DataPosition>) override {}
  std::optional<DataPosition> position(int64_t) override {
    return std::nullopt;
  }
  void rewind(int64_t) override {}

private:
  /// Token `i` of the stream.
  int64_t token(int64_t i) const;

  std::string path_;
  std::unique_ptr<llvm::MemoryBuffer> file_;
  bool loop_;
  int64_t vocab_, numSamples_;
};

TokenFile::TokenFile(const DataOptions &o)
    : Dataset(o), path_(o.path), loop_(o.loop), vocab_(o.vocabSize) {
  std::string key = o.section + ".dataset_path";
  requireRegularFile(path_, key);
  // Mapped (LLVM maps files of more than a few pages): the OS reads what
  // the samples touch.
  auto buffer = llvm::MemoryBuffer::getFile(path_, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    fatal("cannot read " + key + " '" + path_ +
          "': " + buffer.getError().message());
  file_ = std::move(*buffer);
  int64_t bytes = int64_t(file_->getBufferSize());
  if (bytes % 4 != 0)
    fatal("token file '" + path_ + "' is truncated: " + std::to_string(bytes) +
          " bytes is not a whole number of uint32 token ids");
  int64_t numTokens = bytes / 4;
  numSamples_ = numTokens / (seqLen_ + 1);
  if (numSamples_ == 0)
    fatal(key + " '" + path_ + "' holds " + std::to_string(numTokens) +
          " tokens, fewer than one sample (" + std::to_string(seqLen_ + 1) +
          " = " + o.section + ".seq_len + 1)");
}

int64_t TokenFile::token(int64_t i) const {
  uint32_t id;
  std::memcpy(&id, file_->getBufferStart() + 4 * i, 4);
  if (id >= uint64_t(vocab_))
    fatal("token file '" + path_ + "': token " + std::to_string(i) +
          " has id " + std::to_string(id) + ", outside the vocabulary [0, " +
          std::to_string(vocab_) + ")");
  return id;
}

/// The job's tokenizer for a text dataset: model.tokenizer_path, else
/// model.hf_assets_path (as TorchTitan's build_hf_tokenizer), else titan's
/// byte tokenizer when the vocabulary holds the 256 byte values. Its ids
/// must fit the model's vocabulary.
std::unique_ptr<Tokenizer> openTokenizer(const titan::TrainConfig &c,
                                         int64_t vocab, std::string &from) {
  bool deprecated = !c.model.tokenizerPath.empty();
  from = deprecated ? c.model.tokenizerPath : c.model.hfAssetsPath;
  std::string key =
      deprecated ? "model.tokenizer_path" : "model.hf_assets_path";
  std::unique_ptr<Tokenizer> tokenizer;
  if (from.empty()) {
    from = "titan's byte tokenizer";
    if (vocab < 256)
      fatal("a text dataset without model.hf_assets_path (or "
            "model.tokenizer_path) is tokenized by titan's byte tokenizer, "
            "which needs vocab_size >= 256; the model has " +
            std::to_string(vocab));
    tokenizer = titan::data::createByteTokenizer();
  } else {
    auto loaded = titan::data::loadTokenizer(from);
    if (!loaded)
      fatal(key + ": " + llvm::toString(loaded.takeError()));
    tokenizer = std::move(*loaded);
  }
  if (tokenizer->vocabSize() > vocab)
    fatal("the tokenizer of " + key + " '" + from + "' has " +
          std::to_string(tokenizer->vocabSize()) +
          " ids, more than the model's vocab_size " + std::to_string(vocab));
  return tokenizer;
}

/// A data-parallel rank's packed token stream over its share of a text
/// dataset (see Dataset.h).
class TextStream final : public Dataset {
public:
  TextStream(const DataOptions &o, TextSource source,
             std::unique_ptr<Tokenizer> tokenizer, std::string tokenizerFrom);

  std::string describe() const override;
  const TextSource &source() const { return source_; }
  bool sample(int64_t index, int32_t *inputs, int32_t *labels,
              int32_t *wholeInputs) override;
  void resume(int64_t index, std::optional<DataPosition> position) override;
  std::optional<DataPosition> position(int64_t index) override;
  void rewind(int64_t index) override {
    origin_ = index;
    seek(0, 0);
  }

private:
  struct Window {
    DataPosition start;
    std::vector<int32_t> tokens; ///< seqLen + 1
  };

  /// The rank's samples in [origin_, index): the stream index of `index`.
  int64_t streamIndex(int64_t index) const;
  /// Starts the stream at token `token` of share document `document`.
  void seek(int64_t document, int64_t token);
  /// Appends the next document's tokens to the buffer; false at the end of
  /// a finite pass.
  bool tokenizeNext();
  /// Cuts the next window off the buffer into the cache; false at the end
  /// of a finite pass.
  bool produce();
  /// The dataset's index of share document `document`.
  int64_t absolute(int64_t document) const { return begin_ + document; }
  std::string where() const {
    return section_ + ".dataset_path '" + path_ + "'";
  }

  std::string section_, path_, tokenizerFrom_;
  TextSource source_;
  std::unique_ptr<Tokenizer> tokenizer_;
  DataShare share_;
  bool loop_;
  /// The rank's share: documents [begin_, begin_ + count_).
  int64_t begin_, count_;

  /// Tokens not yet cut into windows; they start at front_, and lengths_
  /// holds the token counts of the documents they come from.
  std::vector<int32_t> buffer_;
  std::deque<int64_t> lengths_;
  DataPosition front_;
  /// The share document tokenized next.
  int64_t nextDocument_ = 0;
  /// Tokens of the pass over the share so far; whether it started at the
  /// share's first document (else it cannot tell the share is too short).
  int64_t passTokens_ = 0;
  bool wholePass_ = true;

  /// The stream's windows [cacheFirst_, cacheFirst_ + cache_.size()), of
  /// which a step reads share_.samplesPerStep; stream index 0 is sample
  /// origin_.
  std::deque<Window> cache_;
  int64_t cacheFirst_ = 0, origin_ = 0;
};

TextStream::TextStream(const DataOptions &o, TextSource source,
                       std::unique_ptr<Tokenizer> tokenizer,
                       std::string tokenizerFrom)
    : Dataset(o), section_(o.section), path_(o.path),
      tokenizerFrom_(std::move(tokenizerFrom)), source_(std::move(source)),
      tokenizer_(std::move(tokenizer)), share_(o.share), loop_(o.loop) {
  // split_dataset_by_node of a map-style dataset:
  // Dataset.shard(degree, rank, contiguous=True).
  int64_t n = source_.numDocuments(), d = share_.degree, r = share_.rank;
  if (n < d)
    fatal(where() + " holds " + std::to_string(n) +
          " documents, fewer than the " + std::to_string(d) +
          " data-parallel ranks that split it");
  begin_ = r * (n / d) + std::min(r, n % d);
  count_ = n / d + (r < n % d ? 1 : 0);
  rewind(0);
}

std::string TextStream::describe() const {
  auto files = source_.files();
  return llvm::formatv("{0} ({1} documents in {2} file{3}; data-parallel rank "
                       "{4} of {5} reads documents [{6}, {7})), tokenized by "
                       "{8} ({9}, {10} ids)",
                       path_, source_.numDocuments(), files.size(),
                       files.size() == 1 ? "" : "s", share_.rank, share_.degree,
                       begin_, begin_ + count_, tokenizerFrom_,
                       tokenizer_->kind(), tokenizer_->vocabSize())
      .str();
}

int64_t TextStream::streamIndex(int64_t index) const {
  int64_t batch = share_.localBatch, group = batch * share_.degree;
  int64_t r = index - origin_;
  return r / group * batch +
         std::clamp(r % group - share_.rank * batch, int64_t(0), batch);
}

void TextStream::seek(int64_t document, int64_t token) {
  source_.seek(absolute(document));
  nextDocument_ = document;
  buffer_.clear();
  lengths_.clear();
  cache_.clear();
  cacheFirst_ = 0;
  front_ = {absolute(document), 0};
  passTokens_ = 0;
  wholePass_ = document == 0 && token == 0;
  if (token == 0)
    return;
  tokenizeNext();
  if (token > lengths_.front())
    fatal(where() + ": the checkpoint's data position (token " +
          std::to_string(token) + " of document " +
          std::to_string(front_.document) + ") is past that document's " +
          std::to_string(lengths_.front()) +
          " tokens; was the dataset or the tokenizer changed?");
  buffer_.erase(buffer_.begin(), buffer_.begin() + token);
  front_.token = token;
}

bool TextStream::tokenizeNext() {
  if (nextDocument_ == count_) {
    if (wholePass_ && passTokens_ < seqLen_ + 1)
      fatal(where() + ": the documents data-parallel rank " +
            std::to_string(share_.rank) + " reads ([" + std::to_string(begin_) +
            ", " + std::to_string(begin_ + count_) + ")) hold " +
            std::to_string(passTokens_) + " tokens, fewer than one sample (" +
            std::to_string(seqLen_ + 1) + " = " + section_ + ".seq_len + 1)");
    if (!loop_)
      return false;
    source_.seek(absolute(0));
    nextDocument_ = 0;
    passTokens_ = 0;
    wholePass_ = true;
  }
  llvm::Expected<std::string> text = source_.next();
  if (!text)
    fatal(section_ + ".dataset_path: " + llvm::toString(text.takeError()));
  size_t before = buffer_.size();
  // TorchTitan: tokenizer.encode(text, add_bos=True, add_eos=True).
  tokenizer_->encode(*text, /*bos=*/true, /*eos=*/true, buffer_);
  int64_t added = int64_t(buffer_.size() - before);
  lengths_.push_back(added);
  passTokens_ += added;
  ++nextDocument_;
  return true;
}

bool TextStream::produce() {
  size_t size = size_t(seqLen_ + 1);
  while (buffer_.size() < size)
    if (!tokenizeNext())
      return false;
  Window &w = cache_.emplace_back();
  w.start = front_;
  w.tokens.assign(buffer_.begin(), buffer_.begin() + size);
  buffer_.erase(buffer_.begin(), buffer_.begin() + size);
  // The next window starts `size` tokens on, past the documents it used up.
  front_.token += int64_t(size);
  while (!lengths_.empty() && front_.token >= lengths_.front()) {
    front_.token -= lengths_.front();
    lengths_.pop_front();
    front_.document = absolute((front_.document - begin_ + 1) % count_);
  }
  if (int64_t(cache_.size()) > share_.samplesPerStep) {
    cache_.pop_front();
    ++cacheFirst_;
  }
  return true;
}

bool TextStream::sample(int64_t index, int32_t *inputs, int32_t *labels,
                        int32_t *wholeInputs) {
  int64_t batch = share_.localBatch;
  int64_t r = index - origin_;
  int64_t i = streamIndex(index);
  if (r < 0 || (r / batch) % share_.degree != share_.rank || i < cacheFirst_)
    fatal("internal error: data-parallel rank " + std::to_string(share_.rank) +
          " cannot read sample " + std::to_string(index) + " of " + where());
  while (cacheFirst_ + int64_t(cache_.size()) <= i)
    if (!produce())
      return false;
  const std::vector<int32_t> &tokens = cache_[size_t(i - cacheFirst_)].tokens;
  copyShard([&](int64_t t) { return tokens[size_t(t)]; }, inputs, labels,
            wholeInputs);
  return true;
}

void TextStream::resume(int64_t index, std::optional<DataPosition> position) {
  if (!position) {
    // Samples [0, index) read again, and skipped.
    rewind(0);
    return;
  }
  if (position->document < begin_ || position->document >= begin_ + count_ ||
      position->token < 0)
    fatal(where() + ": the checkpoint's data position of data-parallel rank " +
          std::to_string(share_.rank) + " (document " +
          std::to_string(position->document) +
          ") is not in the documents the rank reads ([" +
          std::to_string(begin_) + ", " + std::to_string(begin_ + count_) +
          ")); was the dataset or the data-parallel degree changed?");
  origin_ = index;
  seek(position->document - begin_, position->token);
}

std::optional<DataPosition> TextStream::position(int64_t index) {
  int64_t i = streamIndex(index);
  while (cacheFirst_ + int64_t(cache_.size()) < i)
    if (!produce())
      break;
  int64_t cached = i - cacheFirst_;
  if (cached < 0)
    fatal("internal error: the data position of sample " +
          std::to_string(index) + " is no longer known");
  return cached < int64_t(cache_.size()) ? cache_[size_t(cached)].start
                                         : front_;
}

/// The path TorchTitan reads for `o`: dataset_path, else the DATASETS
/// table's local path.
std::string resolvePath(const DataOptions &o) {
  if (!o.path.empty())
    return o.path;
  std::string name = StringRef(o.name).lower();
  if (name == "c4_test")
    return "tests/assets/c4_test";
  if (name == "c4" || name == "c4_validation")
    fatal(o.section + ".dataset \"" + o.name +
          "\" is read from the Hugging Face hub (allenai/c4), which titan "
          "cannot reach; download its JSON-lines files and set " +
          o.section + ".dataset_path to them");
  fatal(o.section + ".dataset \"" + o.name +
        "\" is not one of TorchTitan's datasets (c4, c4_test, "
        "c4_validation); set " +
        o.section +
        ".dataset_path to a .bin token file, a JSON-lines or text file, or "
        "a folder of them");
}

} // namespace

int32_t titanrt::tokenizerEosId(const titan::TrainConfig &c, int64_t vocab) {
  if (c.model.tokenizerPath.empty() && c.model.hfAssetsPath.empty())
    fatal("the model's attn_mask_type = \"block_causal\" ends each document "
          "at the tokenizer's EOS token: set model.hf_assets_path (or "
          "model.tokenizer_path) to the tokenizer");
  std::string from;
  std::unique_ptr<Tokenizer> tokenizer = openTokenizer(c, vocab, from);
  std::optional<int32_t> eos = tokenizer->eosId();
  if (!eos)
    fatal("the tokenizer '" + from +
          "' has no EOS token, which the model's attn_mask_type = "
          "\"block_causal\" ends each document at");
  return *eos;
}

namespace {
/// The text dataset of `o` (`defaultPath`: its path comes from the
/// dataset's name).
std::unique_ptr<TextStream> openText(const DataOptions &o, bool defaultPath,
                                     const titan::TrainConfig &config) {
  std::string key = o.section + ".dataset_path";
  if (!llvm::sys::fs::is_directory(o.path))
    requireRegularFile(o.path, key);
  llvm::Expected<TextSource> source = TextSource::open(o.path);
  if (!source)
    fatal(key +
          (defaultPath ? " is not set and " + o.section + ".dataset \"" +
                             o.name + "\" reads " + o.path +
                             " (relative to the working "
                             "directory, as TorchTitan does)"
                       : std::string()) +
          ": " + llvm::toString(source.takeError()));
  std::string from;
  std::unique_ptr<Tokenizer> tokenizer =
      openTokenizer(config, o.vocabSize, from);
  return std::make_unique<TextStream>(o, std::move(*source),
                                      std::move(tokenizer), std::move(from));
}

/// `time` in UTC to the ns: "2026-12-07T10:11:12.123456789Z".
std::string utcTime(llvm::sys::TimePoint<> time) {
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                   time.time_since_epoch())
                   .count();
  std::time_t seconds = std::time_t(ns / 1000000000);
  std::tm utc{};
  char when[32] = "?";
  if (gmtime_r(&seconds, &utc))
    std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &utc);
  char fraction[16];
  std::snprintf(fraction, sizeof fraction, ".%09lldZ",
                (long long)(ns % 1000000000));
  return std::string(when) + fraction;
}

/// `paths` as they are now, named relative to the dataset path `root`.
std::vector<DataFile> stampFiles(StringRef root,
                                 llvm::ArrayRef<std::string> paths,
                                 const std::string &key) {
  std::vector<DataFile> files;
  for (const std::string &path : paths) {
    llvm::sys::fs::file_status status;
    if (std::error_code ec = llvm::sys::fs::status(path, status))
      fatal("cannot read " + key + " '" + path + "': " + ec.message());
    StringRef name(path);
    if (name.consume_front(root) && !name.ltrim('/').empty())
      name = name.ltrim('/');
    else
      name = llvm::sys::path::filename(path);
    files.push_back({name.str(), int64_t(status.getSize()),
                     utcTime(status.getLastModificationTime())});
  }
  return files;
}

/// "80000 bytes, modified 2026-12-07T10:11:12.123456789Z"
std::string describeStamp(const DataFile &f) {
  return std::to_string(f.bytes) + " bytes, modified " + f.modified;
}
} // namespace

void Dataset::checkUnchangedSince(const std::vector<DataFile> &saved,
                                  const std::string &checkpoint) const {
  if (saved.empty())
    return;
  auto changed = [&](const std::string &what) {
    fatal(section_ + ".dataset_path '" + path_ + "': " + what +
          " since the checkpoint '" + checkpoint +
          "' was saved, so its data position would point into other data "
          "(TorchTitan's loader would resume at the saved sample index "
          "regardless); restore the data, or set "
          "checkpoint.exclude_from_loading = [\"dataloader\"] to start the "
          "data afresh");
  };
  llvm::StringMap<const DataFile *> now;
  for (const DataFile &f : files_)
    now[f.name] = &f;
  for (const DataFile &was : saved) {
    auto it = now.find(was.name);
    if (it == now.end())
      changed("'" + was.name + "' (" + describeStamp(was) + ") is gone");
    const DataFile &is = *it->second;
    if (is.bytes != was.bytes)
      changed("'" + was.name + "' " +
              (is.bytes < was.bytes ? "shrank" : "grew") + " from " +
              std::to_string(was.bytes) + " to " + std::to_string(is.bytes) +
              " bytes");
    if (is.modified != was.modified)
      changed("'" + was.name + "' was modified or replaced (" +
              describeStamp(was) + " then, " + describeStamp(is) + " now)");
    now.erase(it);
  }
  for (const DataFile &f : files_)
    if (now.count(f.name))
      changed("'" + f.name + "' is new");
}

std::unique_ptr<Dataset> Dataset::open(const DataOptions &options,
                                       const titan::TrainConfig &config) {
  // titan-compile refuses such a sequence length (ConfigFit).
  titan::mesh::SplitLayout split = options.sequence.split();
  if (split.degree > 1 && !split.divides(options.seqLen))
    fatal("corrupt executable: " + options.section + ".seq_len (" +
          std::to_string(options.seqLen) + ") is not divisible by the " +
          std::to_string(split.numChunks()) +
          " chunks of context parallel's split (degree " +
          std::to_string(split.degree) + ")");
  DataOptions o = options;
  o.path = resolvePath(options);
  std::string key = o.section + ".dataset_path";
  std::unique_ptr<Dataset> dataset;
  std::vector<std::string> paths;
  if (StringRef(o.path).ends_with(".bin")) {
    dataset = std::make_unique<TokenFile>(o);
    paths = {o.path};
  } else {
    std::unique_ptr<TextStream> text =
        openText(o, options.path.empty(), config);
    for (const TextSource::File &file : text->source().files())
      paths.push_back(file.path);
    dataset = std::move(text);
  }
  dataset->section_ = o.section;
  dataset->path_ = o.path;
  dataset->files_ = stampFiles(o.path, paths, key);
  return dataset;
}
