//===- BoxCopy.h - copying a box of one tensor into another -----*- C++ -*-===//
//
// titan.slice, titan.slice_grad and titan.concat on both targets: a box of
// `size` elements per dimension, at `from` in a row-major tensor of shape
// `source` and at `to` in one of shape `target`, planned once as element
// strides so the CPU copies it row by row and a CUDA kernel element by
// element.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_BOXCOPY_H
#define TITANRT_BOXCOPY_H

#include "Error.h"
#include "HostDevice.h"
#include "KernelCall.h"

#include <cstdint>
#include <string>

namespace titanrt {

struct BoxCopyPlan {
  static constexpr int kMaxRank = 8;
  int64_t rank = 0;
  int64_t size[kMaxRank] = {};
  int64_t sourceStride[kMaxRank] = {}, targetStride[kMaxRank] = {};
  int64_t sourceBase = 0, targetBase = 0; ///< the box's first element
  TITANRT_HOST_DEVICE int64_t numel() const {
    int64_t n = 1;
    for (int64_t d = 0; d < rank; ++d)
      n *= size[d];
    return n;
  }
};

/// The plan of a box of shape `box` at `from` in `source` and `to` in
/// `target` (offsets per dimension; nullptr for all zero).
inline BoxCopyPlan planBoxCopy(const abi::Shape &source,
                               const abi::Shape &target, const abi::Shape &box,
                               const int64_t *from, const int64_t *to) {
  BoxCopyPlan p;
  if (box.rank > BoxCopyPlan::kMaxRank)
    kernelFatal("a box copy (slice, slice_grad, concat) of rank " +
                std::to_string(box.rank) + ": at most " +
                std::to_string(BoxCopyPlan::kMaxRank) + " dimensions");
  p.rank = box.rank;
  int64_t sourceStride = 1, targetStride = 1;
  for (int64_t d = box.rank - 1; d >= 0; --d) {
    p.size[d] = box.dim(d);
    p.sourceStride[d] = sourceStride;
    p.targetStride[d] = targetStride;
    p.sourceBase += (from ? from[d] : 0) * sourceStride;
    p.targetBase += (to ? to[d] : 0) * targetStride;
    sourceStride *= source.dim(d);
    targetStride *= target.dim(d);
  }
  return p;
}

/// The source and target offsets of entry `index` of the box's leading
/// `dims` dimensions (row-major over them).
TITANRT_HOST_DEVICE inline void boxOffsets(const BoxCopyPlan &p, int64_t index,
                                           int64_t dims, int64_t &source,
                                           int64_t &target) {
  source = p.sourceBase;
  target = p.targetBase;
  for (int64_t d = dims - 1; d >= 0; --d) {
    int64_t i = index % p.size[d];
    index /= p.size[d];
    source += i * p.sourceStride[d];
    target += i * p.targetStride[d];
  }
}

/// Calls `run(sourceOffset, targetOffset, count)` for each row (the last
/// dimension) of the box.
template <typename Run> void forEachBoxRow(const BoxCopyPlan &p, Run run) {
  if (p.rank == 0) {
    run(p.sourceBase, p.targetBase, int64_t(1));
    return;
  }
  int64_t width = p.size[p.rank - 1];
  if (width == 0)
    return;
  for (int64_t r = 0, rows = p.numel() / width; r < rows; ++r) {
    int64_t s, t;
    boxOffsets(p, r, p.rank - 1, s, t);
    run(s, t, width);
  }
}

/// titan.slice, as both targets' entries decode it (so slice_grad and
/// concat below): the result's box at `starts` in the input.
inline BoxCopyPlan slicePlan(const abi::Shape &in, const abi::Shape &out,
                             const int64_t *starts) {
  return planBoxCopy(in, out, out, starts, nullptr);
}
/// titan.slice_grad: the gradient's box at `starts` in the (zeroed) result.
inline BoxCopyPlan sliceGradPlan(const abi::Shape &grad, const abi::Shape &out,
                                 const int64_t *starts) {
  return planBoxCopy(grad, out, grad, nullptr, starts);
}
/// titan.concat: input `in`, placed `offset` along `dim` of the result (the
/// sizes of the inputs before it).
inline BoxCopyPlan concatPlan(const abi::Shape &in, const abi::Shape &out,
                              int64_t dim, int64_t offset) {
  int64_t to[BoxCopyPlan::kMaxRank] = {};
  if (dim >= 0 && dim < BoxCopyPlan::kMaxRank)
    to[dim] = offset;
  return planBoxCopy(in, out, in, nullptr, to);
}

} // namespace titanrt

#endif // TITANRT_BOXCOPY_H
