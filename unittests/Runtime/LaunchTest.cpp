//===- LaunchTest.cpp - reading the launcher's environment ----------------===//
//
// The variables each launcher sets: torchrun's are torch.distributed.run's
// worker environment (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT, TORCHELASTIC_RUN_ID, and PyTorch 2's
// TORCHELASTIC_USE_AGENT_STORE); srun's are Slurm's task environment
// (SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID, SLURM_STEP_NODELIST).
//
//===----------------------------------------------------------------------===//

#include "Launch.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

using namespace titanrt;

namespace {

llvm::Expected<Launch>
launchOf(const std::map<std::string, std::string> &vars) {
  return readLaunch([&](const char *name) -> const char * {
    auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

std::string errorOf(const std::map<std::string, std::string> &vars) {
  llvm::Expected<Launch> launch = launchOf(vars);
  if (launch)
    return "(no error)";
  return llvm::toString(launch.takeError());
}

const std::map<std::string, std::string> kTorchrun = {
    {"RANK", "5"},
    {"WORLD_SIZE", "16"},
    {"LOCAL_RANK", "1"},
    {"LOCAL_WORLD_SIZE", "8"},
    {"MASTER_ADDR", "n0"},
    {"MASTER_PORT", "29500"},
    {"TORCHELASTIC_RUN_ID", "job"}};

TEST(Launch, NoLauncherIsOneRank) {
  llvm::Expected<Launch> l = launchOf({});
  ASSERT_TRUE(bool(l));
  EXPECT_EQ(l->launcher, Launcher::Alone);
  EXPECT_EQ(l->size, 1);
  EXPECT_FALSE(l->usesStore());
}

TEST(Launch, Torchrun) {
  llvm::Expected<Launch> l = launchOf(kTorchrun);
  ASSERT_TRUE(bool(l)) << llvm::toString(l.takeError());
  EXPECT_EQ(l->launcher, Launcher::Torchrun);
  EXPECT_EQ(l->rank, 5);
  EXPECT_EQ(l->size, 16);
  EXPECT_EQ(l->localRank, 1);
  EXPECT_EQ(l->localSize, 8);
  EXPECT_EQ(l->host, "n0");
  EXPECT_EQ(l->port, 29500);
  EXPECT_TRUE(l->usesStore());
}

TEST(Launch, TorchrunsAgentStoreTakesMasterPort) {
  auto vars = kTorchrun;
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  EXPECT_EQ(launchOf(vars)->port, 29501);
  vars["TITAN_STORE_PORT"] = "40000";
  EXPECT_EQ(launchOf(vars)->port, 40000);
}

TEST(Launch, TorchrunInsideSrunIsTorchrun) {
  auto vars = kTorchrun;
  vars["SLURM_PROCID"] = "0";
  vars["SLURM_STEP_NUM_TASKS"] = "2";
  EXPECT_EQ(launchOf(vars)->launcher, Launcher::Torchrun);
}

// torchrun's workers inherit what started torchrun: srun with an MPI
// plugin (PMIX_RANK, once per node) or mpirun. TORCHELASTIC_RUN_ID, which
// only torchrun sets for its workers, wins; without it a bare RANK is a
// hand-written launch script's, and MPI's variables win.
TEST(Launch, TorchrunWinsOverInheritedMPIVariables) {
  auto vars = kTorchrun;
  vars["PMIX_RANK"] = "0";
  vars["OMPI_COMM_WORLD_SIZE"] = "2";
  EXPECT_EQ(launchOf(vars)->launcher, Launcher::Torchrun);
  vars.erase("TORCHELASTIC_RUN_ID");
  llvm::Expected<Launch> l = launchOf(vars);
  EXPECT_EQ(l->launcher, Launcher::MPI);
  EXPECT_FALSE(l->usesStore());
  EXPECT_EQ(launchOf({{"PMIX_RANK", "0"}})->launcher, Launcher::MPI);
}

TEST(Launch, LocalRankIsTheLaunchers) {
  EXPECT_TRUE(launchOf(kTorchrun)->localRankKnown);
  auto vars = kTorchrun;
  vars.erase("LOCAL_RANK");
  EXPECT_FALSE(launchOf(vars)->localRankKnown);
  // Under srun's torchrun every worker inherits SLURM_LOCALID=0.
  vars = kTorchrun;
  vars["SLURM_LOCALID"] = "0";
  EXPECT_EQ(launchOf(vars)->localRank, 1);
  llvm::Expected<Launch> mpi = launchOf(
      {{"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}});
  EXPECT_EQ(mpi->localRank, 3);
  EXPECT_TRUE(mpi->localRankKnown);
}

TEST(Launch, TorchrunErrorsNameTheVariable) {
  auto vars = kTorchrun;
  vars.erase("MASTER_PORT");
  EXPECT_EQ(errorOf(vars),
            "torchrun set no MASTER_PORT in this rank's environment");
  vars = kTorchrun;
  vars.erase("MASTER_ADDR");
  EXPECT_NE(errorOf(vars).find("no MASTER_ADDR"), std::string::npos);
  vars = kTorchrun;
  vars["RANK"] = "16";
  EXPECT_EQ(errorOf(vars), "RANK=16 is not below WORLD_SIZE=16");
  vars = kTorchrun;
  vars["MASTER_PORT"] = "70000";
  EXPECT_EQ(errorOf(vars),
            "MASTER_PORT: port 70000 is not a TCP port (1 to 65535)");
  vars = kTorchrun;
  vars["TORCHELASTIC_USE_AGENT_STORE"] = "True";
  vars["MASTER_PORT"] = "65535";
  EXPECT_EQ(errorOf(vars), "MASTER_PORT=65535 is torchrun's store, and "
                           "titan's would be the next port: set "
                           "TITAN_STORE_PORT");
  vars = kTorchrun;
  vars["WORLD_SIZE"] = "two";
  EXPECT_EQ(errorOf(vars), "WORLD_SIZE=two is not a non-negative integer");
}

TEST(Launch, Srun) {
  std::map<std::string, std::string> vars = {
      {"SLURM_PROCID", "9"},    {"SLURM_STEP_NUM_TASKS", "16"},
      {"SLURM_LOCALID", "1"},   {"SLURM_STEP_NODELIST", "gpu[07-08]"},
      {"SLURM_JOB_ID", "1234"}, {"SLURM_STEP_ID", "2"}};
  llvm::Expected<Launch> l = launchOf(vars);
  ASSERT_TRUE(bool(l)) << llvm::toString(l.takeError());
  EXPECT_EQ(l->launcher, Launcher::Slurm);
  EXPECT_EQ(l->rank, 9);
  EXPECT_EQ(l->size, 16);
  EXPECT_EQ(l->localRank, 1);
  EXPECT_EQ(l->host, "gpu07");
  // The same on every rank of the step, below the ephemeral ports.
  EXPECT_EQ(l->port, 20000 + (1234 * 64 + 2) % 12768);
  vars["MASTER_ADDR"] = "head";
  vars["MASTER_PORT"] = "29500";
  l = launchOf(vars);
  EXPECT_EQ(l->host, "head");
  EXPECT_EQ(l->port, 29500);
}

TEST(Launch, FirstSlurmHost) {
  EXPECT_EQ(firstSlurmHost("node1"), "node1");
  EXPECT_EQ(firstSlurmHost("node1,node2"), "node1");
  EXPECT_EQ(firstSlurmHost("node[03-05,9]"), "node03");
  EXPECT_EQ(firstSlurmHost("node[9,3-5]"), "node9");
  EXPECT_EQ(firstSlurmHost("rack1-n[001-004]"), "rack1-n001");
  EXPECT_EQ(firstSlurmHost("a1,b[2-3]"), "a1");
  EXPECT_EQ(firstSlurmHost("n[1-2]-ib,m1"), "n1-ib");
}

} // namespace
