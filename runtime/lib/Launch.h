//===- Launch.h - which launcher started this rank ------------------------===//
//
// A training executable is started the way TorchTitan jobs are: by torchrun
// (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT), by srun alone
// (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID) or by an MPI launcher
// (mpirun, srun --mpi=pmix: OMPI_*, PMI_*, PMIX_*). The launcher decides how
// the ranks meet: MPI's own bootstrap, or a TCP store at MASTER_ADDR:
// MASTER_PORT (TCPStore.h), as torch.distributed's env:// rendezvous,
// served on the machine MASTER_ADDR names by its local rank 0 (torchrun's
// rank 0 need not be on that machine). TITAN_STORE_PORT overrides the port.
// Reading the environment is a pure function of it, so
// every launcher's case is unit-tested.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_LAUNCH_H
#define TITANRT_LIB_LAUNCH_H

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace titanrt {

enum class Launcher {
  Alone,    ///< no launcher: one rank
  MPI,      ///< mpirun, or srun with an MPI plugin: MPI_Init finds the peers
  Torchrun, ///< torchrun (torch.distributed.run): env:// rendezvous
  Slurm,    ///< srun without an MPI plugin: the same TCP store
};

/// This rank's place in the job and where the ranks meet.
struct Launch {
  Launcher launcher = Launcher::Alone;
  int64_t rank = 0, size = 1;
  /// Among the ranks on this machine; localSize 0 when the launcher does
  /// not say.
  int64_t localRank = 0, localSize = 0;
  /// Whether the launcher said the local rank (else it is taken as 0).
  bool localRankKnown = false;
  /// The TCP store (torchrun, srun) at host:port: the rank with local
  /// rank 0 on the machine `host` names serves it (under torchrun and
  /// srun that need not be rank 0), and every rank connects to it.
  std::string host;
  int port = 0;
  /// Where the values came from, for messages ("torchrun: RANK=3 ...").
  std::string source;

  /// True when the ranks meet through the TCP store rather than MPI.
  bool usesStore() const {
    return launcher == Launcher::Torchrun || launcher == Launcher::Slurm;
  }
};

/// One environment variable's value, or null when unset.
using EnvLookup = llvm::function_ref<const char *(const char *)>;

/// The launch `env` describes; an error names a variable that is missing
/// or malformed (RANK without WORLD_SIZE, a RANK outside WORLD_SIZE, a
/// MASTER_PORT that is not a port, ...).
llvm::Expected<Launch> readLaunch(EnvLookup env);

/// The first host of a Slurm host list ("node[03-05,9],gpu1" -> "node03").
std::string firstSlurmHost(llvm::StringRef hostList);

/// readLaunch of this process's environment; stops the run on an error.
Launch launchFromEnvironment();

} // namespace titanrt

#endif // TITANRT_LIB_LAUNCH_H
