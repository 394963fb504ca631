//===- TensorBoard.h - TensorBoard event files ------------------*- C++ -*-===//
//
// metrics.enable_tensorboard writes scalars where TorchTitan v0.2.0's
// MetricsProcessor does (torchtitan/components/metrics.py):
//
//   <dump_folder>/<save_tb_folder>/<%Y%m%d-%H%M>/                 one rank
//   <dump_folder>/<save_tb_folder>/<%Y%m%d-%H%M>/rank_<r>/ save_for_all_ranks
//
// each holding events.out.tfevents.<unix time>.<hostname>.<pid>, the name
// TensorBoard's own writer gives. Without save_for_all_ranks the rank that
// writes is TorchTitan's metrics rank: rank 0, or under pipeline parallelism
// (except ZBVZeroBubble) the first rank of the last stage.
//
// The file is a sequence of TFRecords (uint64 length, masked CRC32C of the
// length, the data, masked CRC32C of the data), each an Event protobuf: the
// first says file_version "brain.Event:2", every later one holds one scalar
// (wall_time, step, summary.value {tag, simple_value}). Each scalar is
// flushed as it is written, so a run that crashes keeps what it logged.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_TENSORBOARD_H
#define TITANRT_LIB_TENSORBOARD_H

#include "Manifest.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <memory>
#include <string>

namespace titan {
struct TrainConfig;
} // namespace titan

namespace titanrt {

class Communicator;

/// One TensorBoard event file, open for appending scalars.
class EventFileWriter {
public:
  /// Creates `folder` (and its parents) and a new event file in it; a
  /// folder or file that cannot be created is a fatal error naming it.
  explicit EventFileWriter(const std::string &folder);

  /// Appends the scalar `tag` = `value` at `step` and flushes it.
  void logScalar(llvm::StringRef tag, int64_t step, double value);

  const std::string &path() const { return path_; }

private:
  /// Writes `event` (an encoded Event) as one TFRecord.
  void writeRecord(llvm::StringRef event);

  std::string path_;
  std::unique_ptr<llvm::raw_fd_ostream> out_;
};

/// The event file this rank writes under metrics.enable_tensorboard, or null
/// (TensorBoard off, or another rank logs). With several ranks and
/// save_for_all_ranks, every rank takes the first rank's clock for the
/// folder's time (collective over all ranks), so all land in one folder.
std::unique_ptr<EventFileWriter> openTensorBoard(const titan::TrainConfig &c,
                                                 const Manifest &m,
                                                 Communicator *comm);

} // namespace titanrt

#endif // TITANRT_LIB_TENSORBOARD_H
