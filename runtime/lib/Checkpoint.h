//===- Checkpoint.h - distributed checkpoints and exports -------*- C++ -*-===//
//
// A checkpoint is the folder <dump_folder>/<checkpoint.folder>/step-<N>:
//
//   index.json                        format, training state, and for every
//                                     state tensor its global shape, dtype
//                                     and which file holds which block
//   shard-<rank>-of-<world>.safetensors
//                                     the blocks one rank wrote: each block
//                                     once (the first of the ranks holding
//                                     it), named "<kind>:<parameter>"
//
// Kinds are "param", "exp_avg" and "exp_avg_sq" (AdamW's moments). Each rank
// writes and reads only its blocks; a load into another layout intersects
// each of its blocks with the saved ones. Each block in the index carries the
// XXH3-64 checksum of its bytes ("xxh3_64", 16 hex digits; xxHash is fast
// enough that hashing costs little next to the write); a load reads every
// block it needs whole and refuses one that does not match, naming the
// tensor, the block and the file. Checkpoints saved before checksums load
// unverified, with a warning. A save is written into
// step-<N>.tmp, fsynced, and renamed when every rank has finished, so a
// step-<N> folder is always complete; leftover *.tmp folders are removed at
// the start of the next run and never loaded.
//
// A model-only export (the last save with last_save_model_only) is one
// consolidated step-<N>/model.safetensors with TorchTitan's parameter names
// in export_dtype, what initial_load_path reads; every rank writes its
// blocks into it at their offsets, so no rank holds the whole model. With
// last_save_in_hf it is a Hugging Face checkpoint instead (HFCheckpoint.h),
// written the same way.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_CHECKPOINT_H
#define TITANRT_LIB_CHECKPOINT_H

#include "Dataset.h"
#include "Manifest.h"
#include "SafeTensors.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace titan {
struct TrainConfig;
} // namespace titan

namespace titanrt {

class Communicator;

/// One kind of per-parameter state: this rank's shards (local shapes, in
/// manifest parameter order).
struct StateSet {
  std::string kind; ///< "param", "exp_avg", "exp_avg_sq"
  std::vector<TensorRef> *shards;
};

/// What a resumed run needs besides the tensors.
struct TrainingState {
  int64_t step = 0;            ///< steps completed (the LR schedule's and
                               ///< AdamW's bias correction's position)
  int64_t samplesConsumed = 0; ///< the data position, in samples
  int64_t tokensSeen = 0;
  uint64_t seed = 0; ///< training.seed (init is the run's only random draw)
  /// A text dataset's position, per data-parallel rank ("data_positions";
  /// empty for a token file, whose position is samplesConsumed, and in
  /// checkpoints that predate it).
  std::vector<DataPosition> dataPositions;
  /// The training data's files when the run started ("data_files"; empty
  /// in checkpoints that predate it): a resume refuses data that changed.
  std::vector<DataFile> dataFiles;
};

/// A full checkpoint on its way: where it goes, what it holds, and the
/// checksums of the blocks this rank wrote.
struct SaveInProgress {
  TrainingState state;
  std::string folder, tmp;
  std::vector<StateSet> sets; ///< the kinds (no shards: written already)
  llvm::StringMap<uint64_t> ownChecksums;
};

/// Checks a checkpoint index (the text `text` of the file `path`) against
/// the model `m` as a resume does, reading no tensor file; the error names
/// what is wrong. The fuzz target titan-checkpoint-index-fuzzer calls it.
llvm::Error checkCheckpointIndex(llvm::StringRef text, const std::string &path,
                                 const Manifest &m);

class Checkpointer {
public:
  Checkpointer(const titan::TrainConfig &config, const Manifest &manifest,
               Communicator *comm);

  /// <dump_folder>/<checkpoint.folder>; the folder itself when absolute.
  const std::string &root() const { return root_; }
  /// root()/step-<step>
  std::string stepFolder(int64_t step) const;

  /// Removes what killed saves left (step-*.tmp folders, *.tmp files);
  /// the first rank does it while the others wait.
  void removeUnfinishedSaves();

  /// The checkpoint to resume from, the same on every rank:
  /// checkpoint.load_step if set (it must exist and hold training state), or
  /// with checkpoint.enable the latest complete checkpoint with training
  /// state; -1 for none. Model-only exports are not resume points.
  int64_t resumeStep();

  /// Reads the state of `folder` (a full checkpoint) into `sets`, whatever
  /// layout it was saved from, after checking its index against the model.
  TrainingState load(const std::string &folder, llvm::ArrayRef<StateSet> sets);

  /// Whether resuming loads `part` of a checkpoint: TorchTitan's parts
  /// "model", "optimizer", "lr_scheduler", "dataloader" and "train_state",
  /// less those checkpoint.exclude_from_loading names.
  bool loads(llvm::StringRef part) const;

  /// load() for a resume, without the excluded parts: the parameters
  /// ("model") and the moments ("optimizer") are left as `sets` hold them,
  /// the data position ("dataloader") and the step and tokens seen
  /// ("train_state") start at 0.
  TrainingState resume(const std::string &folder,
                       llvm::ArrayRef<StateSet> sets);

  /// Writes a full checkpoint of `state.step`; returns its folder.
  std::string save(const TrainingState &state, llvm::ArrayRef<StateSet> sets);
  /// save() in three parts, so that the middle one, which is this rank's
  /// alone (no collective), can run on another thread (AsyncCheckpoint.h):
  /// beginSave makes the folder (every rank), writeOwnBlocks writes this
  /// rank's file, and commitSave, once every rank has written, brings the
  /// checksums to the first rank, which writes the index and renames the
  /// folder into place (every rank).
  SaveInProgress beginSave(const TrainingState &state,
                           llvm::ArrayRef<StateSet> sets);
  void writeOwnBlocks(SaveInProgress &save,
                      llvm::ArrayRef<StateSet> sets) const;
  std::string commitSave(SaveInProgress &save);

  /// Writes the model-only export of `step` in `exportDtype`: titan's
  /// model.safetensors (returns the file), or with `hf` Hugging Face's
  /// sharded files, index and config.json (HFCheckpoint.h; returns the
  /// folder).
  std::string exportModel(int64_t step, const StateSet &params,
                          const std::string &exportDtype, bool hf);

  /// Keeps at most keep_latest_k step folders (0: all): an earlier run's go
  /// first, oldest first, then this run's oldest; the newest of `saved`
  /// (this run's) always stays. First rank only.
  void prune(const std::vector<int64_t> &saved);

private:
  /// Every rank waits for the others (a no-op on one rank).
  void barrier();
  std::string shardFileName(int64_t rank) const;
  /// Once every rank has written into `tmp`: syncs it and renames it to
  /// `folder` (replacing an earlier run's of the same step).
  void commit(const std::string &tmp, const std::string &folder);

  const titan::TrainConfig &config_;
  const Manifest &manifest_;
  Communicator *comm_;
  std::vector<int64_t> coords_; ///< this rank's mesh coordinates
  std::string root_;
  bool leader_;
};

/// The state kinds a full checkpoint holds.
extern const char *const kStateKinds[3];

} // namespace titanrt

#endif // TITANRT_LIB_CHECKPOINT_H
