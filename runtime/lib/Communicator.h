//===- Communicator.h - collectives over a device mesh ----------*- C++ -*-===//

#ifndef TITANRT_LIB_COMMUNICATOR_H
#define TITANRT_LIB_COMMUNICATOR_H

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace titanrt {

/// Mesh axes in rank-layout order (tp varies fastest), as #dist.mesh.
enum MeshAxis { kPP, kDPReplicate, kDPShard, kCP, kTP, kNumAxes };

/// How all-reduce combines the ranks' values.
enum class Reduction { Sum, Average, Max };

/// An in-flight collective; finish() completes it.
struct Request {
  virtual ~Request() = default;
  virtual void finish() = 0;
};

/// The process group of a run: one rank of a mesh, with a communicator per
/// subset of axes created on first use. Backed by MPI on CPUs; NCCL (with an
/// MPI bootstrap) implements the same interface for GPUs.
class Communicator {
public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int worldSize() const = 0;
  const std::vector<int64_t> &meshShape() const { return mesh_; }
  /// This rank's coordinate along `axis`.
  int64_t coordinate(MeshAxis axis) const;

  /// The collectives of the dist dialect over the ranks that differ only in
  /// the axes of `axisMask` (bit i = MeshAxis i). `elementSize` is 4 or 8
  /// (float or double); `outer`/`inner` are the element counts before and
  /// after the gathered/scattered dimension, `dimSize` its local size.
  virtual std::unique_ptr<Request> allGather(const void *in, void *out,
                                             int elementSize, int64_t outer,
                                             int64_t dimSize, int64_t inner,
                                             unsigned axisMask) = 0;
  virtual std::unique_ptr<Request> reduceScatter(const void *in, void *out,
                                                 int elementSize, int64_t outer,
                                                 int64_t dimSize, int64_t inner,
                                                 unsigned axisMask) = 0;
  virtual std::unique_ptr<Request> allReduce(const void *in, void *out,
                                             int elementSize, int64_t count,
                                             Reduction reduction,
                                             unsigned axisMask) = 0;
  /// Splits `in` along its middle dimension into one part per rank and
  /// sends part p to rank p; the parts received are concatenated along the
  /// middle dimension of `out` in rank order. `in` is
  /// [outer][dimSize][inner]; `out` is [outerOut][dimSizeOut][innerOut]
  /// after the caller's choice of split and concat dimensions (see
  /// CollectiveABI.cpp).
  virtual std::unique_ptr<Request>
  allToAll(const void *in, void *out, int elementSize, int64_t splitOuter,
           int64_t splitDim, int64_t splitInner, int64_t concatOuter,
           int64_t concatDim, int64_t concatInner, unsigned axisMask) = 0;
  /// Every rank receives the `count` elements of the group's rank `root`.
  virtual std::unique_ptr<Request> broadcast(const void *in, void *out,
                                             int elementSize, int64_t count,
                                             int64_t root,
                                             unsigned axisMask) = 0;
  /// Sends `in` to the rank `shift` steps further along the single axis of
  /// `axisMask` (wrapping) and receives the one from `shift` steps back.
  virtual std::unique_ptr<Request> sendRecv(const void *in, void *out,
                                            int elementSize, int64_t count,
                                            int64_t shift,
                                            unsigned axisMask) = 0;
  virtual void barrier() = 0;

  /// Size of the group of `axisMask`.
  int64_t groupSize(unsigned axisMask) const;
  /// This rank's index in the group of ranks that differ only in `axes`,
  /// numbered with `axes[0]` outermost (the order a sharding lists them).
  int64_t groupIndex(const std::vector<MeshAxis> &axes) const;

protected:
  std::vector<int64_t> mesh_;
};

/// Initializes the process group for a mesh (MPI_Init on first call); the
/// world size must equal the mesh's product, or the run stops with a message
/// naming both.
Communicator &initCommunicator(const std::vector<int64_t> &meshShape);
/// The communicator set up by initCommunicator.
Communicator &communicator();
/// Finalizes MPI.
void shutdownCommunicator();

} // namespace titanrt

#endif // TITANRT_LIB_COMMUNICATOR_H
