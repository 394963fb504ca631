//===- CapturedGraphs.h - a device's captured step graphs -------*- C++ -*-===//
//
// The CUDA graph exec of each compiled step (or pipeline phase on a frame:
// any key) and how often it ran,
// with destruction that leaves nothing dangling: the arena's release, the
// device's release and the shutdown before the communicator's teardown may
// each destroy the graphs, in any order, and each exec is destroyed once.
// Host-only (the exec type and its destroy function are parameters), so
// the bookkeeping is unit-tested without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_CAPTUREDGRAPHS_H
#define TITANRT_CUDA_CAPTUREDGRAPHS_H

#include <cstdint>
#include <map>

namespace titanrt::cuda {

template <typename Exec, typename Key> class CapturedGraphs {
public:
  struct Captured {
    int64_t runs = 0;
    Exec exec{};
  };

  Captured &operator[](const Key &key) { return graphs_[key]; }

  /// Destroys every exec with `destroy` and forgets it, so a later call
  /// destroys nothing twice, and counts the steps as never run: the next
  /// run of each is eager again (its plans, on a reallocated arena), then
  /// captured anew.
  template <typename Destroy> void destroyAll(Destroy destroy) {
    for (auto &[key, c] : graphs_)
      if (c.exec)
        destroy(c.exec);
    graphs_.clear();
  }

private:
  std::map<Key, Captured> graphs_;
};

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_CAPTUREDGRAPHS_H
