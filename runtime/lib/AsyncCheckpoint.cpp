//===- AsyncCheckpoint.cpp - checkpoint.async_mode's saves ----------------===//

#include "AsyncCheckpoint.h"
#include "Communicator.h"
#include "Error.h"

#include "titanrt/Device.h"

#include <cassert>
#include <new>

using namespace titanrt;

AsyncCheckpointer::AsyncCheckpointer(Checkpointer &checkpoints,
                                     const Manifest &m, Communicator *comm,
                                     Device &device, bool pinned,
                                     std::vector<std::string> kinds)
    : checkpoints_(checkpoints), m_(m), comm_(comm), device_(device),
      pinned_(pinned) {
  // Kept from save to save: allocating (and pinning) them is the slow
  // part, and every save needs the same. Not zeroed: the copy is their
  // first write.
  staging_.resize(kinds.size());
  staged_.resize(kinds.size());
  for (size_t k = 0; k < kinds.size(); ++k)
    for (const Manifest::Param &p : m_.params) {
      size_t count = size_t(numel(p.localShape));
      float *shard = count ? new (std::nothrow) float[count] : nullptr;
      if (count && !shard)
        fatal("checkpoint.async_mode: cannot allocate " +
              std::to_string(count * sizeof(float)) +
              " bytes of host staging for '" + kinds[k] + ":" + p.name +
              "' (background saves keep a host copy of the rank's state; "
              "use checkpoint.async_mode = \"disabled\")");
      staging_[k].emplace_back(shard);
      if (pinned_ && count)
        device_.pinHostMemory(shard, count * sizeof(float));
      staged_[k].push_back({p.name, p.localShape, shard});
    }
  for (size_t k = 0; k < kinds.size(); ++k)
    sets_.push_back({kinds[k], &staged_[k]});
}

AsyncCheckpointer::~AsyncCheckpointer() {
  if (writer_.joinable())
    writer_.join();
  if (pinned_)
    for (auto &kind : staging_)
      for (std::unique_ptr<float[]> &shard : kind)
        if (shard)
          device_.unpinHostMemory(shard.get());
}

void AsyncCheckpointer::start(const TrainingState &state,
                              const CopyShard &copy) {
  assert(!save_ && !writer_.joinable() && "a save is still in flight");
  for (size_t k = 0; k < staging_.size(); ++k)
    for (size_t i = 0; i < m_.params.size(); ++i)
      if (staging_[k][i])
        copy(k, i, staging_[k][i].get());
  save_ = checkpoints_.beginSave(state, sets_);
  written_ = false;
  writer_ = std::thread([this] {
    checkpoints_.writeOwnBlocks(*save_, sets_);
    written_ = true;
  });
}

std::optional<std::string> AsyncCheckpointer::poll() {
  if (!save_)
    return std::nullopt;
  // Every rank commits at the same step: the first where none is writing.
  double writing = written_ ? 0 : 1;
  if (comm_)
    comm_->hostAllReduce(&writing, 1, Reduction::Sum, (1u << kNumAxes) - 1);
  if (writing > 0)
    return std::nullopt;
  return commit();
}

std::optional<std::string> AsyncCheckpointer::wait() {
  if (!save_)
    return std::nullopt;
  return commit();
}

std::string AsyncCheckpointer::commit() {
  writer_.join();
  std::string folder = checkpoints_.commitSave(*save_);
  save_.reset();
  return folder;
}
