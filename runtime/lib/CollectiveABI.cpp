//===- CollectiveABI.cpp - C entry points of the dist collectives ---------===//

#include "titanrt/KernelABI.h"

#include "Communicator.h"
#include "ContextParallel.h"
#include "Error.h"
#include "RingSchedule.h"

#include "llvm/ADT/SmallVector.h"

#include <string>
#include <vector>

using namespace titanrt;

namespace {

struct Layout {
  int64_t outer = 1, dim = 1, inner = 1;
};

/// Splits the input shape around dimension `d`.
Layout layout(const int64_t *shapes, int64_t d) {
  int64_t rank = shapes[0];
  Layout l;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t size = shapes[1 + i];
    if (i < d)
      l.outer *= size;
    else if (i == d)
      l.dim = size;
    else
      l.inner *= size;
  }
  return l;
}

/// Elements of the input.
int64_t elementCount(const int64_t *shapes) {
  Layout l = layout(shapes, 0);
  return l.outer * l.dim * l.inner;
}

template <Dtype T>
void *allGather(void **b, const int64_t *s, const int64_t *a, void *ws) {
  int64_t d = a[0];
  Layout l = layout(s, d);
  // The result's shape follows the input's: [rank, dims...].
  const int64_t *result = s + 1 + s[0];
  return communicator()
      .allGather(b[0], b[1], T, l.outer, l.dim, l.inner, result[1 + d],
                 unsigned(a[2]), ws)
      .release();
}

template <Dtype T>
void *reduceScatter(void **b, const int64_t *s, const int64_t *a, void *ws) {
  Layout l = layout(s, a[0]);
  return communicator()
      .reduceScatter(b[0], b[1], T, l.outer, l.dim, l.inner, unsigned(a[2]), ws)
      .release();
}

template <Dtype T>
void *allReduce(void **b, const int64_t *s, const int64_t *a, void *ws) {
  return communicator()
      .allReduce(b[0], b[1], T, elementCount(s), Reduction(int(a[1])),
                 unsigned(a[2]))
      .release();
}

template <Dtype T>
void *allToAll(void **b, const int64_t *s, const int64_t *a, void *ws) {
  int64_t split = a[0], concat = a[1];
  Layout in = layout(s, split);
  int64_t parts = communicator().groupSize(unsigned(a[2]));
  // The part each rank exchanges: the input with the split dimension cut.
  llvm::SmallVector<int64_t, 8> part(s, s + 1 + s[0]);
  part[1 + split] /= parts;
  Layout out = layout(part.data(), concat);
  return communicator()
      .allToAll(b[0], b[1], T, in.outer, in.dim, in.inner, out.outer, out.dim,
                out.inner, unsigned(a[2]), ws)
      .release();
}

template <Dtype T>
void *broadcast(void **b, const int64_t *s, const int64_t *a, void *ws) {
  return communicator()
      .broadcast(b[0], b[1], T, elementCount(s), a[0], unsigned(a[2]))
      .release();
}

template <Dtype T>
void *sendRecv(void **b, const int64_t *s, const int64_t *a, void *ws) {
  return communicator()
      .sendRecv(b[0], b[1], T, elementCount(s), a[0], unsigned(a[2]))
      .release();
}

} // namespace

extern "C" {

#define TITAN_RT_DEFINE_TYPE(name, impl, dtype)                                \
  void *titan_rt_##name##_##dtype(void **b, const int64_t *s,                  \
                                  const int64_t *i, const double *, void *w,   \
                                  const int64_t *) {                           \
    return impl<Dtype::dtype>(b, s, i, w);                                     \
  }
// Every element type the kernel IR's collectives carry.
#define TITAN_RT_DEFINE(name, impl)                                            \
  TITAN_RT_DEFINE_TYPE(name, impl, f32)                                        \
  TITAN_RT_DEFINE_TYPE(name, impl, f64)                                        \
  TITAN_RT_DEFINE_TYPE(name, impl, bf16)                                       \
  TITAN_RT_DEFINE_TYPE(name, impl, f16)                                        \
  TITAN_RT_DEFINE_TYPE(name, impl, f8E4M3FN)                                   \
  TITAN_RT_DEFINE_TYPE(name, impl, f8E5M2)

#define TITAN_KERNEL_Collective(name, impl) TITAN_RT_DEFINE(name, impl)
#include "titan/Contract/KernelCatalog.def"
#undef TITAN_RT_DEFINE
#undef TITAN_RT_DEFINE_TYPE

void titan_rt_wait(void *request) {
  std::unique_ptr<Request> r(static_cast<Request *>(request));
  r->finish();
}

} // extern "C"

int32_t titanrt::shardOffset(const int64_t *ints) {
  // ints: {stride, number of axes, axis indices...}
  return int32_t(groupPlace(ints + 1).index * ints[0]);
}

titanrt::GroupPlace titanrt::groupPlace(const int64_t *axisList) {
  std::vector<MeshAxis> axes;
  int64_t size = 1;
  for (int64_t i = 0; i < axisList[0]; ++i) {
    axes.push_back(MeshAxis(int(axisList[1 + i])));
    size *= communicator().meshShape()[axes.back()];
  }
  return {communicator().groupIndex(axes), size};
}

titanrt::RingPlace titanrt::ringPlace(const RingCall &call) {
  RingPlace place;
  place.axisMask = call.axisMask;
  Communicator *comm = activeCommunicator();
  if (!comm || call.axis < 0)
    return place;
  MeshAxis axis = MeshAxis(call.axis);
  place.index = comm->coordinate(axis);
  place.size = comm->meshShape()[axis];
  return place;
}

ChunkLayout titanrt::contextParallelLayout(const char *kernel,
                                           const int64_t *ints,
                                           int64_t querySeq, int64_t keySeq) {
  int64_t degree = ints[0], kvShift = ints[1], loadBalanced = ints[2];
  titan::mesh::SplitLayout split{degree, loadBalanced == 1};
  int64_t parts = split.chunksPerRank();
  if (degree < 1 || split.numChunks() > ChunkLayout::kMaxKeyChunks ||
      kvShift < -1 || kvShift >= degree ||
      (loadBalanced != 0 && loadBalanced != 1) || querySeq % parts != 0 ||
      keySeq != (kvShift < 0 ? degree : 1) * querySeq)
    kernelFatal(std::string(kernel) + ": cp degree " + std::to_string(degree) +
                " (at most " +
                std::to_string(ChunkLayout::kMaxKeyChunks / parts) +
                "), kv_shift " + std::to_string(kvShift) + ", load_balanced " +
                std::to_string(loadBalanced) + ", query sequence " +
                std::to_string(querySeq) + " and key sequence " +
                std::to_string(keySeq) + " are not a context-parallel layout");
  return contextLayout(split, groupPlace(ints + 3).index, kvShift, querySeq);
}
