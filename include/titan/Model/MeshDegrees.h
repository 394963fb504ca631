//===- MeshDegrees.h - a training job's parallel degrees --------*- C++ -*-===//
//
// The device mesh's degrees as plain numbers, for the layers that reason
// about a job without building IR (the planner's candidates, the driver's
// config checks) as well as for the pass pipelines' options.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_MODEL_MESHDEGREES_H
#define TITAN_MODEL_MESHDEGREES_H

#include "titan/Contract/MeshAxes.h"

#include <cstdint>
#include <iterator>

namespace titan {

/// The device mesh's degrees, data_parallel_shard_degree = -1 resolved.
struct MeshDegrees {
  int64_t pp = 1, dpReplicate = 1, dpShard = 1, cp = 1, tp = 1;
  int64_t worldSize() const { return pp * dpReplicate * dpShard * cp * tp; }
  /// The degree of `axis` (the fields in the mesh table's order).
  int64_t degree(mesh::Axis axis) const {
    const int64_t degrees[] = {pp, dpReplicate, dpShard, cp, tp};
    static_assert(std::size(degrees) == mesh::kNumAxes);
    return degrees[axis];
  }
};

} // namespace titan

#endif // TITAN_MODEL_MESHDEGREES_H
