//===- Dataset.h - token data for training ----------------------*- C++ -*-===//
//
// The samples a rank trains (or validates) on, numbered as the trainer
// numbers them: sample g of a step's global batch is row g % batch of
// data-parallel rank (g / batch) % dp, and samples continue across steps
// and microbatches (g = samples consumed before the step + (microbatch x dp
// + dp rank) x batch + row). Two kinds of data:
//
//  - a `.bin` file of little-endian uint32 token ids: one stream that every
//    rank shares, cut into samples of seq_len + 1 tokens; sample g is the
//    g-th (modulo their count), whichever rank reads it. Its position is
//    the number of samples consumed.
//
//  - text (titan::data::TextSource: JSON lines, text lines, folders of
//    them), read as TorchTitan v0.2.0's HuggingFaceDataset reads a local
//    (map-style) dataset: data-parallel rank r of D reads the contiguous
//    share split_dataset_by_node gives it (Dataset.shard(D, r, contiguous):
//    documents [r x n/D + min(r, n%D), ...), the first n%D ranks one more),
//    each document tokenized as needed into BOS + tokens + EOS, appended to
//    a buffer that is cut into samples of seq_len + 1 tokens (input x[:-1],
//    label x[1:]). The rank's samples are the consecutive samples of its own
//    stream, which loops over its share forever, the buffer carried over
//    (a finite pass ends instead, for validation). TP, CP and PP ranks of a
//    data-parallel rank read the same stream. Its position, saved in
//    checkpoints, is a DataPosition per data-parallel rank.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_DATASET_H
#define TITANRT_LIB_DATASET_H

#include "titan/Contract/ContextParallelLayout.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace titan {
struct TrainConfig;
} // namespace titan

namespace titanrt {

/// Context parallel's split of a sequence (titan/Contract/
/// ContextParallelLayout.h). Load-balanced, as TorchTitan v0.2.0 splits it,
/// the sequence is cut into 2 x degree chunks and cp rank `rank` holds
/// chunks rank and 2 x degree - 1 - rank, in that order: under the causal
/// mask an early chunk attends to few tokens and a late one to many, so
/// every rank gets the same share of attention's work. Otherwise rank
/// `rank` holds chunk `rank` of degree. Tokens and labels are split alike;
/// degree 1 holds the whole sequence.
struct SequenceShard {
  int64_t degree = 1, rank = 0;
  /// The manifest's load_balanced (for the sequence axes).
  bool loadBalanced = true;

  titan::mesh::SplitLayout split() const { return {degree, loadBalanced}; }
  /// The tokens a rank holds of a sequence of `seqLen`.
  int64_t length(int64_t seqLen) const { return seqLen / degree; }
  /// The sequence position of the rank's token `t` (t < length(seqLen)).
  int64_t position(int64_t t, int64_t seqLen) const;
};

/// Where a data-parallel rank's text stream stands (TorchTitan's
/// sample_idx and token_buffer in one): its next sample starts at token
/// `token` of document `document` of the dataset (BOS and EOS count as
/// tokens of their document).
struct DataPosition {
  int64_t document = 0, token = 0;
};

/// A file the training data is read from, as the run found it at start:
/// checkpoints record them ("data_files") so that a resume can refuse data
/// that changed under its saved position. Size and modification time, not
/// a hash: the data is mapped and read only where samples fall.
struct DataFile {
  std::string name; ///< relative to the dataset path (a file: its name)
  int64_t bytes = 0;
  /// Modification time, UTC to the ns ("2026-12-07T02:49:05.666573995Z"):
  /// a string, since JSON tools round 64-bit integers through doubles.
  std::string modified;
};

/// Which samples a data-parallel rank reads, in the numbering above.
struct DataShare {
  int64_t rank = 0, degree = 1;
  int64_t localBatch = 1;
  /// The samples the rank reads per step (local batch x accumulation): a
  /// text stream keeps that many, since pipeline stages read a step's
  /// microbatches in their own order.
  int64_t samplesPerStep = 1;
};

/// What a dataset is read for. For validation: section "validation", its
/// dataset, dataset_path and seq_len, share {dp rank, dp degree,
/// validation.local_batch_size, the same}, and loop = (validation.steps !=
/// -1); row j of validation batch b on data-parallel rank r is then sample
/// b x local batch x dp + r x local batch + j. A finite pass (steps = -1)
/// ends when sample() returns false, which data-parallel ranks may reach at
/// different batches (their shares differ); rewind(0) starts the next
/// validation's pass. A looping one (steps = N) continues the stream from
/// one validation to the next, as TorchTitan's does.
struct DataOptions {
  /// The config section: "training" or "validation" (errors name
  /// <section>.dataset and <section>.dataset_path).
  std::string section = "training";
  std::string name;       ///< <section>.dataset
  std::string path;       ///< <section>.dataset_path
  int64_t vocabSize = 0;  ///< the model's; token ids must be below it
  int64_t seqLen = 0;     ///< the global sequence length
  SequenceShard sequence; ///< the rank's part of each sequence
  DataShare share;
  /// Whether the stream starts again at its end (training), or ends
  /// (validation.steps = -1: one pass over the set).
  bool loop = true;
};

/// The EOS id of the job's tokenizer (model.tokenizer_path, else
/// model.hf_assets_path, as for a text dataset): where TorchTitan's
/// block-causal mask ends a document, whatever kind of data is read. Stops
/// the run with an error naming the keys when there is none.
int32_t tokenizerEosId(const titan::TrainConfig &config, int64_t vocab);

class Dataset {
public:
  /// The data of `options` for the job `config` (whose model.tokenizer_path,
  /// else model.hf_assets_path, names the tokenizer of a text dataset), with
  /// the data-set name rules of TorchTitan's DATASETS table:
  /// dataset_path when set, read by its type; else "c4_test" reads
  /// ./tests/assets/c4_test, and any other name is an error (titan cannot
  /// reach the Hugging Face hub). Stops the run with an error naming the
  /// file and the problem.
  static std::unique_ptr<Dataset> open(const DataOptions &options,
                                       const titan::TrainConfig &config);
  virtual ~Dataset();

  /// One line for the log: the path, its kind, its size, the tokenizer.
  virtual std::string describe() const = 0;

  /// The tokens sample() copies: the shard's length of the sequence.
  int64_t localLength() const { return sequence_.length(seqLen_); }

  /// Copies the rank's shard of sample `index` (numbered as above; a text
  /// stream reads only its rank's samples, in increasing steps): inputs are
  /// its first seqLen tokens, labels its last seqLen (each localLength()
  /// tokens, in the shard's order). With `wholeInputs`, also the whole
  /// sequence's seqLen inputs in order (TorchTitan's block-causal mask
  /// needs every position's document under context parallel). False past
  /// the end of a finite pass.
  virtual bool sample(int64_t index, int32_t *inputs, int32_t *labels,
                      int32_t *wholeInputs = nullptr) = 0;

  /// Continues from a checkpoint: the next sample read is `index`, and a
  /// text stream starts at `position` (its rank's saved one; none: from
  /// the share's start, skipping the samples a run without saved positions
  /// consumed).
  virtual void resume(int64_t index, std::optional<DataPosition> position) = 0;

  /// A text stream's position before sample `index` (the next step's
  /// first); std::nullopt for a token file, whose position is the sample
  /// count.
  virtual std::optional<DataPosition> position(int64_t index) = 0;

  /// Starts a new finite pass from the share's start, sample `index` first
  /// (validation).
  virtual void rewind(int64_t index) = 0;

  /// The files read, as they were when the dataset was opened.
  const std::vector<DataFile> &files() const { return files_; }
  /// Stops the run, naming the file, when the files `saved` (a checkpoint's
  /// record, from `checkpoint`) are not these: one changed, shrunk, grew,
  /// was replaced, is gone or is new. TorchTitan's stateful loader would
  /// resume at the saved sample index in whatever the file holds now. An
  /// empty record (checkpoints before it) checks nothing.
  void checkUnchangedSince(const std::vector<DataFile> &saved,
                           const std::string &checkpoint) const;

protected:
  Dataset(const DataOptions &options)
      : sequence_(options.sequence), seqLen_(options.seqLen) {}

  /// Copies the shard of a window of seqLen + 1 tokens, token(i) giving
  /// token i (and, with `wholeInputs`, its first seqLen tokens).
  template <typename Token>
  void copyShard(Token token, int32_t *inputs, int32_t *labels,
                 int32_t *wholeInputs) const {
    for (int64_t t = 0, n = localLength(); t < n; ++t) {
      int64_t position = sequence_.position(t, seqLen_);
      inputs[t] = int32_t(token(position));
      labels[t] = int32_t(token(position + 1));
    }
    if (wholeInputs)
      for (int64_t position = 0; position < seqLen_; ++position)
        wholeInputs[position] = int32_t(token(position));
  }

  SequenceShard sequence_;
  int64_t seqLen_;

private:
  std::string section_, path_;
  std::vector<DataFile> files_;
};

} // namespace titanrt

#endif // TITANRT_LIB_DATASET_H
