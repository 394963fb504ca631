//===- AsyncCheckpoint.h - checkpoint.async_mode's saves --------*- C++ -*-===//
//
// TorchTitan's "async" and "async_with_pinned_mem" checkpoints: at a save
// step the rank's state is copied into host staging buffers (kept from save
// to save; page-locked with async_with_pinned_mem on a GPU, so the copy runs
// at the bus's speed) and training goes on; a thread writes this rank's
// file from the copy (Checkpointer::writeOwnBlocks, which has no
// collective); at the first step end where every rank has written (a
// one-number all-reduce while a save is in flight) the main thread commits
// it as a synchronous save does (checksums, index, rename). So the step
// pays the copy, and collectives stay on the main thread. A save still in
// flight is waited for at the next save, at the end and before a run stops
// at a non-finite loss. A crash before the commit leaves step-<N>.tmp,
// which the next start removes: the last committed checkpoint stays, as
// when a synchronous save is cut short. The staging buffers are allocated
// with the run, so a machine without the host memory says so at start.
// As in TorchTitan, the last step's save and model-only exports are
// synchronous.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_ASYNCCHECKPOINT_H
#define TITANRT_LIB_ASYNCCHECKPOINT_H

#include "Checkpoint.h"

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace titanrt {

class Device;

class AsyncCheckpointer {
public:
  /// Copies this rank's shard of parameter `param` of state kind `set`
  /// (whole, local shape) to `out`.
  using CopyShard = std::function<void(size_t set, size_t param, float *out)>;

  /// Allocates (and with `pinned` page-locks) the staging of this rank's
  /// shards of each of `kinds`; stops the run, naming the bytes, when the
  /// host has not the memory.
  AsyncCheckpointer(Checkpointer &checkpoints, const Manifest &m,
                    Communicator *comm, Device &device, bool pinned,
                    std::vector<std::string> kinds);
  /// Joins a writer that finished without a commit (runs end through
  /// wait(); error exits leave the thread and the .tmp folder behind).
  ~AsyncCheckpointer();

  /// Stages the state through `copy` and starts writing the checkpoint of
  /// `state.step`. Every rank at the same step, with no save in flight.
  void start(const TrainingState &state, const CopyShard &copy);
  /// Every rank at each step's end: commits the save in flight once every
  /// rank has written it; its folder then.
  std::optional<std::string> poll();
  /// Waits for the save in flight, if any, and commits it; its folder.
  std::optional<std::string> wait();
  bool inFlight() const { return save_.has_value(); }

private:
  std::string commit();

  Checkpointer &checkpoints_;
  const Manifest &m_;
  Communicator *comm_;
  Device &device_;
  bool pinned_;
  /// Per kind, per parameter: the staged shard, and the views of them the
  /// writer reads.
  std::vector<std::vector<std::unique_ptr<float[]>>> staging_;
  std::vector<std::vector<TensorRef>> staged_;
  std::vector<StateSet> sets_;
  std::optional<SaveInProgress> save_;
  std::thread writer_;
  std::atomic<bool> written_{false};
};

} // namespace titanrt

#endif // TITANRT_LIB_ASYNCCHECKPOINT_H
