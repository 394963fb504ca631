//===- CommunicatorBackends.cpp - the entry of libtitanrt_comm ------------===//
//
// libtitanrt_comm holds the MPI communicator and MPI's bootstrap for NCCL
// ranks under mpirun, and is the only part of the runtime that links MPI:
// libtitanrt loads it with dlopen when a run needs MPI, so single-rank
// executables and GPU ranks started by torchrun or srun need no MPI
// library (Communicator.cpp).
//
//===----------------------------------------------------------------------===//

#include "Bootstrap.h"
#include "Communicator.h"
#include "Error.h"

using namespace titanrt;

extern "C" {

/// A new MPI communicator for the mesh of `axes` sizes.
__attribute__((visibility("default"))) Communicator *
titan_rt_create_communicator(const int64_t *mesh, int64_t axes) {
  std::vector<int64_t> shape(mesh, mesh + axes);
  return createMPICommunicator(shape).release();
}

/// MPI's bootstrap for NCCL's ranks under mpirun.
__attribute__((visibility("default"))) Bootstrap *
titan_rt_create_mpi_bootstrap() {
  return createMPIBootstrap().release();
}

__attribute__((visibility("default"))) void titan_rt_finalize_mpi() {
  finalizeMPI();
}

} // extern "C"
