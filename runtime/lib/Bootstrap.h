//===- Bootstrap.h - how the ranks of a NCCL job meet -----------*- C++ -*-===//
//
// Before NCCL connects the GPUs, the ranks need each other's company on the
// host: rank 0's ncclUniqueId on every rank, barriers, and a way for a
// failing rank to stop the others. Under mpirun that is MPI
// (MPICommunicator.cpp's MPIBootstrap, in libtitanrt_comm); under torchrun
// and srun it is a TCP store one rank serves (StoreBootstrap.cpp, in
// libtitanrt, which needs no MPI library).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_BOOTSTRAP_H
#define TITANRT_LIB_BOOTSTRAP_H

#include <cstddef>
#include <memory>
#include <string>

namespace titanrt {

struct Launch;

class Bootstrap {
public:
  virtual ~Bootstrap() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// Among the ranks on this machine; localSize() 0 when unknown.
  virtual int localRank() const = 0;
  virtual int localSize() const = 0;
  /// Rank 0's `bytes` at `data`, on every rank.
  virtual void broadcast(void *data, size_t bytes) = 0;
  virtual void barrier() = 0;
  /// Makes fatal() on this rank stop every rank.
  virtual void stopEveryRankOnError() = 0;
  /// The end of a run: no more aborts to watch. The rank serving a store
  /// returns once every rank has called it, so none finds the store gone.
  virtual void finish() = 0;
};

/// A job of one rank, started without a launcher: nothing to meet.
class LoneBootstrap : public Bootstrap {
public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  int localRank() const override { return 0; }
  int localSize() const override { return 1; }
  void broadcast(void *, size_t) override {}
  void barrier() override {}
  void stopEveryRankOnError() override {}
  void finish() override {}
};

/// The TCP store's bootstrap for `launch` (torchrun, srun): local rank 0 of
/// MASTER_ADDR's machine serves the store; every wait is bounded by
/// `timeoutSeconds`. Stops the run with a message on failure.
std::unique_ptr<Bootstrap> createStoreBootstrap(const Launch &launch,
                                                double timeoutSeconds);

} // namespace titanrt

#endif // TITANRT_LIB_BOOTSTRAP_H
