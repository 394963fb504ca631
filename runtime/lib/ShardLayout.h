//===- ShardLayout.h - which block of a tensor each rank holds --*- C++ -*-===//
//
// A rank's shard of a parameter is a box of the global tensor: a dimension
// split over mesh axes a1..ak is divided by each in turn (outermost first,
// ceil-sized parts), the trailing storage axes (dp_replicate, dp_shard, cp) as
// one group; that group may leave an uneven remainder (FSDP padding), so the
// box can be smaller than the local shape, the rest being zero. Init, loading,
// saving and resharding all move data between such boxes, one contiguous run
// (along the last dimension) at a time.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_SHARDLAYOUT_H
#define TITANRT_LIB_SHARDLAYOUT_H

#include "Manifest.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace titanrt {

/// A box of a tensor in its global coordinates.
struct Box {
  std::vector<int64_t> start, size;
  bool empty() const;
  int64_t numel() const;
};

/// Row-major storage of a box of a tensor: the element at global index g
/// lies at the offset of g - origin in a tensor of shape `shape` (which may
/// be larger than what is valid, as a padded local shard is).
struct Storage {
  std::vector<int64_t> origin, shape;
};

/// The coordinates of world rank `rank` on each mesh axis (tp fastest).
std::vector<int64_t> meshCoordinates(const std::vector<int64_t> &mesh,
                                     int64_t rank);

/// The block of `p` held by the rank at `coords` (empty for a rank holding
/// only padding).
Box shardBox(const Manifest::Param &p, const std::vector<int64_t> &mesh,
             const std::vector<int64_t> &coords);

/// Whether the rank at `coords` is the one that writes `p`'s block to a
/// checkpoint: the first of the ranks holding the same block (coordinate 0
/// on every axis that does not split `p`; on the pp axis, the pipeline rank
/// of `p`'s stage).
bool writesShard(const Manifest::Param &p, const std::vector<int64_t> &coords);

/// The intersection of two boxes (empty if they do not meet).
Box intersect(const Box &a, const Box &b);

/// Two of `boxes` (non-empty, inside a tensor of the same rank) that
/// overlap, as indices, or nullopt. Near-linear for the grid-like tilings
/// layouts produce (each box marks the cells of the grid their edges
/// span), so a checkpoint of thousands of ranks is checked quickly.
std::optional<std::pair<size_t, size_t>>
findOverlap(const std::vector<Box> &boxes);

/// Calls `run(srcOffset, dstOffset, count)` for each contiguous run of
/// `region`, which both storages must contain: rows along the last
/// dimension, merged where they follow each other in both storages (a
/// block of whole rows is one run).
template <typename Run>
void forEachRun(const Storage &src, const Storage &dst, const Box &region,
                Run run) {
  size_t rank = region.size.size();
  if (rank == 0) {
    run(0, 0, 1);
    return;
  }
  if (region.empty())
    return;
  std::vector<int64_t> index(rank, 0);  // odometer over the leading dims
  int64_t runS = 0, runD = 0, runN = 0; // the run being extended
  while (true) {
    int64_t s = 0, d = 0;
    for (size_t i = 0; i < rank; ++i) {
      int64_t g = region.start[i] + (i + 1 < rank ? index[i] : 0);
      s = s * src.shape[i] + g - src.origin[i];
      d = d * dst.shape[i] + g - dst.origin[i];
    }
    if (runN > 0 && s == runS + runN && d == runD + runN) {
      runN += region.size.back();
    } else {
      if (runN > 0)
        run(runS, runD, runN);
      runS = s, runD = d, runN = region.size.back();
    }
    int64_t i = int64_t(rank) - 2;
    for (; i >= 0; --i) {
      if (++index[i] < region.size[i])
        break;
      index[i] = 0;
    }
    if (i < 0)
      break;
  }
  run(runS, runD, runN);
}

} // namespace titanrt

#endif // TITANRT_LIB_SHARDLAYOUT_H
