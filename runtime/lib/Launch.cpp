//===- Launch.cpp - which launcher started this rank ----------------------===//

#include "Launch.h"
#include "Error.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstdlib>

using namespace titanrt;
using llvm::StringRef;

namespace {

llvm::Error launchError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

/// Reads the integer variable `name` into `out`; `required` makes an unset
/// one an error.
llvm::Error readInt(EnvLookup env, const char *name, int64_t &out,
                    bool required, StringRef launcher) {
  const char *value = env(name);
  if (!value) {
    if (required)
      return launchError(launcher + " set no " + name +
                         " in this rank's environment");
    return llvm::Error::success();
  }
  if (StringRef(value).trim().getAsInteger(10, out) || out < 0)
    return launchError(
        llvm::formatv("{0}={1} is not a non-negative integer", name, value));
  return llvm::Error::success();
}

/// The store's port into `launch.port`: TITAN_STORE_PORT when set, else
/// MASTER_PORT (`fallback` when unset; 0: required). torchrun's agent may
/// serve its own store at MASTER_PORT (TORCHELASTIC_USE_AGENT_STORE=True,
/// PyTorch 2's c10d rendezvous); titan's is then the next port.
llvm::Error readPort(EnvLookup env, Launch &launch, int fallback) {
  const char *var =
      env("TITAN_STORE_PORT") ? "TITAN_STORE_PORT" : "MASTER_PORT";
  int64_t port = fallback;
  if (llvm::Error e = readInt(env, var, port, fallback == 0, launch.source))
    return e;
  if (port < 1 || port > 65535)
    return launchError(llvm::formatv(
        "{0}: port {1} is not a TCP port (1 to 65535)", var, port));
  const char *agentStore = env("TORCHELASTIC_USE_AGENT_STORE");
  if (StringRef(var) == "MASTER_PORT" && agentStore &&
      StringRef(agentStore).equals_insensitive("true")) {
    if (port == 65535)
      return launchError("MASTER_PORT=65535 is torchrun's store, and titan's "
                         "would be the next port: set TITAN_STORE_PORT");
    ++port;
  }
  launch.port = int(port);
  return llvm::Error::success();
}

llvm::Error checkRank(const Launch &launch, const char *rankVar,
                      const char *sizeVar) {
  if (launch.size < 1)
    return launchError(llvm::formatv("{0}={1}: a job has at least one rank",
                                     sizeVar, launch.size));
  if (launch.rank >= launch.size)
    return launchError(llvm::formatv("{0}={1} is not below {2}={3}", rankVar,
                                     launch.rank, sizeVar, launch.size));
  return llvm::Error::success();
}

/// torchrun: the env:// rendezvous's variables (torch.distributed.run
/// sets them all for every worker).
llvm::Expected<Launch> readTorchrun(EnvLookup env) {
  Launch l;
  l.launcher = Launcher::Torchrun;
  l.source = "torchrun";
  for (auto [var, field] :
       {std::pair{"RANK", &l.rank}, {"WORLD_SIZE", &l.size}})
    if (llvm::Error e = readInt(env, var, *field, true, l.source))
      return std::move(e);
  if (llvm::Error e = readInt(env, "LOCAL_RANK", l.localRank, false, l.source))
    return std::move(e);
  l.localRankKnown = env("LOCAL_RANK") != nullptr;
  if (llvm::Error e =
          readInt(env, "LOCAL_WORLD_SIZE", l.localSize, false, l.source))
    return std::move(e);
  if (llvm::Error e = checkRank(l, "RANK", "WORLD_SIZE"))
    return std::move(e);
  const char *host = env("MASTER_ADDR");
  if (!host || !*host)
    return launchError("torchrun set no MASTER_ADDR in this rank's "
                       "environment (the TCP store's host)");
  l.host = host;
  if (llvm::Error e = readPort(env, l, 0))
    return std::move(e);
  return l;
}

/// srun without an MPI plugin. The store is MASTER_ADDR:MASTER_PORT when
/// set (TorchTitan's multinode_trainer.slurm exports both), else the step's
/// first node at a port derived from the job and step ids, the same on
/// every rank of the step and, mostly, different for concurrent steps.
llvm::Expected<Launch> readSlurm(EnvLookup env) {
  Launch l;
  l.launcher = Launcher::Slurm;
  l.source = "srun";
  if (llvm::Error e = readInt(env, "SLURM_PROCID", l.rank, true, l.source))
    return std::move(e);
  if (llvm::Error e =
          readInt(env, "SLURM_STEP_NUM_TASKS", l.size, true, l.source))
    return std::move(e);
  if (llvm::Error e =
          readInt(env, "SLURM_LOCALID", l.localRank, false, l.source))
    return std::move(e);
  l.localRankKnown = env("SLURM_LOCALID") != nullptr;
  if (llvm::Error e = checkRank(l, "SLURM_PROCID", "SLURM_STEP_NUM_TASKS"))
    return std::move(e);
  const char *host = env("MASTER_ADDR");
  const char *nodes = env("SLURM_STEP_NODELIST");
  l.host = host && *host ? host : nodes ? firstSlurmHost(nodes) : "";
  if (l.host.empty())
    return launchError("srun set neither MASTER_ADDR nor "
                       "SLURM_STEP_NODELIST (the machine whose local rank 0 "
                       "serves the TCP store)");
  int64_t job = 0, step = 0;
  if (llvm::Error e = readInt(env, "SLURM_JOB_ID", job, false, l.source))
    return std::move(e);
  if (llvm::Error e = readInt(env, "SLURM_STEP_ID", step, false, l.source))
    return std::move(e);
  // Below Linux's ephemeral ports (32768 and up).
  if (llvm::Error e = readPort(env, l, int(20000 + (job * 64 + step) % 12768)))
    return std::move(e);
  return l;
}

/// mpirun and srun with an MPI plugin: MPI_Init finds the ranks; the
/// variables say that this is such a launch, and the local rank.
std::optional<Launch> readMPI(EnvLookup env) {
  for (const char *var : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
                          "PMI_RANK", "MV2_COMM_WORLD_SIZE"})
    if (env(var)) {
      Launch l;
      l.launcher = Launcher::MPI;
      l.source = std::string("an MPI launcher (") + var + ")";
      for (const char *local : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                "PMI_LOCAL_RANK", "SLURM_LOCALID"})
        if (const char *value = env(local)) {
          l.localRankKnown = !StringRef(value).getAsInteger(10, l.localRank);
          break;
        }
      return l;
    }
  return std::nullopt;
}

} // namespace

std::string titanrt::firstSlurmHost(StringRef hostList) {
  StringRef first = hostList;
  size_t bracket = first.find('[');
  size_t comma = first.find(',');
  if (comma < bracket)
    return first.take_front(comma).trim().str();
  if (bracket == StringRef::npos)
    return first.trim().str();
  // "prefix[03-05,9]suffix": the range's first number, zero padding kept.
  StringRef prefix = first.take_front(bracket);
  StringRef inside = first.drop_front(bracket + 1);
  size_t end = inside.find_first_of(",-]");
  StringRef suffix = inside.drop_front(inside.find(']') + 1);
  suffix = suffix.take_front(suffix.find(','));
  return (prefix.trim() + inside.take_front(end) + suffix.trim()).str();
}

llvm::Expected<Launch> titanrt::readLaunch(EnvLookup env) {
  // torchrun's workers inherit what started torchrun (srun with an MPI
  // plugin sets PMIX_RANK, say, once per node): its own variable wins.
  if (env("TORCHELASTIC_RUN_ID"))
    return readTorchrun(env);
  if (std::optional<Launch> mpi = readMPI(env))
    return *mpi;
  if (env("RANK") && env("WORLD_SIZE"))
    return readTorchrun(env);
  if (env("SLURM_PROCID") && env("SLURM_STEP_NUM_TASKS"))
    return readSlurm(env);
  return Launch{};
}

Launch titanrt::launchFromEnvironment() {
  llvm::Expected<Launch> launch =
      readLaunch([](const char *name) { return std::getenv(name); });
  if (!launch)
    fatal("cannot tell this rank's place in the job: " +
          llvm::toString(launch.takeError()));
  return *launch;
}
