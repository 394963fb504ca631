//===- CommunicatorBackends.cpp - the entry of libtitanrt_comm ------------===//
//
// libtitanrt_comm holds the communicators (MPI, and NCCL in a CUDA build)
// and is the only part of the runtime that links MPI: libtitanrt loads it
// with dlopen when a run has several ranks, so a single-rank executable
// needs neither mpirun nor an MPI library (Communicator.cpp).
//
//===----------------------------------------------------------------------===//

#include "Communicator.h"
#include "Error.h"

using namespace titanrt;

#ifndef TITAN_HAVE_NCCL
std::unique_ptr<Communicator>
titanrt::createNCCLCommunicator(const std::vector<int64_t> &, double) {
  fatal("this runtime was built without CUDA, so it has no NCCL "
        "communicator; rebuild titan with TITAN_ENABLE_CUDA=ON");
}
#endif

extern "C" {

/// A new communicator for the mesh of `axes` sizes; `backend` is a
/// titanrt::Backend.
__attribute__((visibility("default"))) Communicator *
titan_rt_create_communicator(const int64_t *mesh, int64_t axes, int backend,
                             double startupTimeoutSeconds) {
  std::vector<int64_t> shape(mesh, mesh + axes);
  return (Backend(backend) == Backend::NCCL
              ? createNCCLCommunicator(shape, startupTimeoutSeconds)
              : createMPICommunicator(shape))
      .release();
}

__attribute__((visibility("default"))) void titan_rt_finalize_mpi() {
  finalizeMPI();
}

} // extern "C"
