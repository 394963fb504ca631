//===- CommonWorkspaces.h - what targets' workspace rules share -*- C++ -*-===//
//
// The shape helpers the targets' workspace rules use, and the collectives'
// staging, which both built-in targets' communicators
// (runtime/lib/MPICommunicator.cpp, NCCLCommunicator.cpp) lay out alike.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TARGET_COMMONWORKSPACES_H
#define TITAN_TARGET_COMMONWORKSPACES_H

#include "titan/Dialect/Dist/IR/Dist.h"

namespace titan::target {

class WorkspaceRules;

/// Rows of a tensor: the elements before its last dimension.
int64_t rowsOf(mlir::Value v);
/// Elements of a tensor.
int64_t elementsOf(mlir::Value v);
/// Its last dimension (1 for rank 0).
int64_t lastDimOf(mlir::Value v);
/// The GEMMs' rows of one shard and one outer index of a collective
/// matmul's tensor split around dimension `dim` (runtime/lib/RingSchedule.h,
/// RingLayout::rows): the dimensions from `dim` up to the last.
int64_t ringRowsOf(mlir::Value v, int64_t dim);
/// Bytes of a copy of `v` with `elementBytes` per element, rounded up to 64.
int64_t copyBytes(mlir::Value v, int64_t elementBytes);

/// The communicators' staging: a gather or scatter along an inner
/// dimension, or of padded (uneven) shards, goes through a rank-major copy
/// of the data; an all-to-all packs its parts and receives them apart. The
/// other collectives need none.
int64_t allGatherStagingBytes(dist::AllGatherStartOp op);
int64_t reduceScatterStagingBytes(dist::ReduceScatterStartOp op);
int64_t allToAllStagingBytes(dist::AllToAllStartOp op);

/// Adds the collectives' staging to `rules`.
void addCollectiveWorkspaceRules(WorkspaceRules &rules);

} // namespace titan::target

#endif // TITAN_TARGET_COMMONWORKSPACES_H
