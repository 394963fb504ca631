//===- LocalShard.h - the parts of a tensor a rank keeps --------*- C++ -*-===//
//
// dist.local_shard, planned once for both targets: along dimension `dim`
// the rank with index `index` in its group keeps its chunks of the group's
// split (titan/Contract/ContextParallelLayout.h): chunk `index` of
// `degree`, or, load-balanced, chunks `index` and `2 degree - 1 - index` of
// `2 degree` (TorchTitan's context-parallel layout). Each kept part is a
// strided copy: `rows` runs of `width` elements, `srcPitch` apart in the
// input and `dstPitch` apart in the result.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LOCALSHARD_H
#define TITANRT_LOCALSHARD_H

#include "KernelCall.h"

#include "titan/Contract/ContextParallelLayout.h"

namespace titanrt {

struct LocalShardPlan {
  int64_t rows, width, srcPitch, dstPitch;
  int64_t parts;        ///< chunks kept: 1, or 2 (load-balanced)
  int64_t srcOffset[2]; ///< each part's first element in the input
  int64_t dstOffset[2]; ///< ... and in the result
};

inline LocalShardPlan planLocalShard(const abi::Shape &in, int64_t dim,
                                     int64_t index,
                                     titan::mesh::SplitLayout split) {
  int64_t rows = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d)
    rows *= in.dim(d);
  for (int64_t d = dim + 1; d < in.rank; ++d)
    inner *= in.dim(d);
  int64_t parts = split.chunksPerRank();
  int64_t chunk = in.dim(dim) / split.numChunks();
  LocalShardPlan p{
      rows,   chunk * inner, in.dim(dim) * inner, chunk * parts * inner, parts,
      {0, 0}, {0, 0}};
  for (int64_t j = 0; j < parts; ++j) {
    p.srcOffset[j] = split.globalChunk(index, j) * chunk * inner;
    p.dstOffset[j] = j * chunk * inner;
  }
  return p;
}

} // namespace titanrt

#endif // TITANRT_LOCALSHARD_H
