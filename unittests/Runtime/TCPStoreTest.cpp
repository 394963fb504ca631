//===- TCPStoreTest.cpp - ranks meeting at the TCP store ------------------===//
//
// N processes (forked, each one rank as torchrun or srun would start it)
// meet through the store bootstrap NCCL uses without MPI: one serves, all
// exchange an id and wait at barriers; a failing rank stops the others
// with its message, and a lost server stops them too.
//
//===----------------------------------------------------------------------===//

#include "TCPStore.h"
#include "Bootstrap.h"
#include "Error.h"
#include "Launch.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace titanrt;

namespace {

constexpr double kTimeout = 20;

/// A port free on the loopback interface now.
/// A store served on a free loopback port (null, failing the test, if it
/// cannot start).
std::unique_ptr<TCPStoreServer> loopbackServer() {
  llvm::Expected<std::unique_ptr<TCPStoreServer>> server =
      TCPStoreServer::start("127.0.0.1", 0);
  EXPECT_TRUE(server && *server);
  if (!server) {
    llvm::consumeError(server.takeError());
    return nullptr;
  }
  return std::move(*server);
}

int freePort() {
  std::unique_ptr<TCPStoreServer> server = loopbackServer();
  return server ? server->port() : 0;
}

Launch launchOf(int64_t rank, int64_t size, int64_t localRank, int port) {
  Launch l;
  l.launcher = Launcher::Torchrun;
  l.source = "torchrun";
  l.rank = rank;
  l.size = size;
  l.localRank = localRank;
  l.localRankKnown = true;
  l.host = "127.0.0.1";
  l.port = port;
  return l;
}

struct Exit {
  int status;
  std::string stderrText;
};

/// Runs `rank(r)` in `ranks` processes; each one's exit status and stderr.
std::vector<Exit> runRanks(int ranks, const std::function<int(int)> &rank) {
  std::vector<pid_t> pids;
  std::vector<std::string> logs;
  for (int r = 0; r < ranks; ++r) {
    logs.push_back(::testing::TempDir() + "tcpstore-rank" + std::to_string(r) +
                   "-" + std::to_string(::getpid()) + ".log");
    pid_t pid = ::fork();
    if (pid == 0) {
      int fd = ::open(logs.back().c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
      ::dup2(fd, 2);
      std::_Exit(rank(r));
    }
    pids.push_back(pid);
  }
  std::vector<Exit> exits;
  for (int r = 0; r < ranks; ++r) {
    int status = 0;
    ::waitpid(pids[size_t(r)], &status, 0);
    std::ifstream log(logs[size_t(r)]);
    std::stringstream text;
    text << log.rdbuf();
    exits.push_back({WIFEXITED(status) ? WEXITSTATUS(status) : -1, text.str()});
    std::remove(logs[size_t(r)].c_str());
  }
  return exits;
}

TEST(TCPStore, RanksExchangeAnIdAndMeetAtBarriers) {
  int port = freePort();
  constexpr int kRanks = 4;
  std::array<unsigned char, 128> id; // stands for ncclUniqueId
  for (size_t i = 0; i < id.size(); ++i)
    id[i] = (unsigned char)(i * 37 + 11);
  // Rank 2 has local rank 0, so it serves: torchrun's rank 0 need not be
  // on MASTER_ADDR's machine.
  std::vector<Exit> exits = runRanks(kRanks, [&](int r) {
    std::unique_ptr<Bootstrap> b = createStoreBootstrap(
        launchOf(r, kRanks, r == 2 ? 0 : r + 1, port), kTimeout);
    std::array<unsigned char, 128> got{};
    if (r == 0)
      got = id;
    for (int round = 0; round < 3; ++round) {
      b->broadcast(got.data(), got.size());
      if (got != id)
        return 2;
      b->barrier();
    }
    b->finish();
    return 0;
  });
  for (int r = 0; r < kRanks; ++r)
    EXPECT_EQ(exits[size_t(r)].status, 0)
        << "rank " << r << ": " << exits[size_t(r)].stderrText;
}

TEST(TCPStore, AFailingRankStopsTheOthers) {
  int port = freePort();
  std::vector<Exit> exits = runRanks(3, [&](int r) {
    std::unique_ptr<Bootstrap> b =
        createStoreBootstrap(launchOf(r, 3, r, port), kTimeout);
    b->stopEveryRankOnError();
    b->barrier();
    if (r == 1)
      fatal("checkpoint folder is full");
    b->barrier(); // rank 1 never comes: its abort ends the wait
    return 0;
  });
  EXPECT_EQ(exits[1].status, 1);
  EXPECT_NE(exits[1].stderrText.find("error: checkpoint folder is full"),
            std::string::npos);
  for (int r : {0, 2}) {
    EXPECT_EQ(exits[size_t(r)].status, 1);
    EXPECT_NE(exits[size_t(r)].stderrText.find(
                  "error: stopping: rank 1: checkpoint folder is full"),
              std::string::npos)
        << exits[size_t(r)].stderrText;
  }
}

TEST(TCPStore, LosingTheServerStopsTheOthers) {
  int port = freePort();
  std::vector<Exit> exits = runRanks(2, [&](int r) {
    std::unique_ptr<Bootstrap> b =
        createStoreBootstrap(launchOf(r, 2, r, port), kTimeout);
    b->barrier();
    if (r == 0)
      std::_Exit(9); // killed, say: no message, no abort key
    b->barrier();
    return 0;
  });
  EXPECT_EQ(exits[0].status, 9);
  EXPECT_EQ(exits[1].status, 1);
  EXPECT_NE(exits[1].stderrText.find("lost the TCP store at 127.0.0.1:"),
            std::string::npos)
      << exits[1].stderrText;
}

TEST(TCPStore, WaitsEndWithTheKeyAndTheAddress) {
  std::unique_ptr<TCPStoreServer> server = loopbackServer();
  ASSERT_TRUE(server);
  int port = server->port();
  llvm::Expected<std::unique_ptr<TCPStoreClient>> client =
      TCPStoreClient::connect("127.0.0.1", port, kTimeout);
  ASSERT_TRUE(bool(client));
  ASSERT_FALSE(bool((*client)->set("a", "1")));
  EXPECT_EQ(*(*client)->get("a"), "1");
  EXPECT_EQ(*(*client)->add("n", 5), 5);
  EXPECT_EQ(*(*client)->add("n", -2), 3);
  // The short wait only where it is the point: every request has it.
  (*client)->setTimeout(0.3);
  llvm::Expected<std::string> missing = (*client)->get("never");
  ASSERT_FALSE(bool(missing));
  EXPECT_EQ(llvm::toString(missing.takeError()),
            "waited 0.3 s for 'never' at the TCP store 127.0.0.1:" +
                std::to_string(port) +
                " (comm.init_timeout_seconds); a rank has not arrived");
}

TEST(TCPStore, NoServerIsAnErrorNamingTheAddress) {
  int port = freePort();
  llvm::Expected<std::unique_ptr<TCPStoreClient>> client =
      TCPStoreClient::connect("127.0.0.1", port, 0.2);
  ASSERT_FALSE(bool(client));
  std::string message = llvm::toString(client.takeError());
  EXPECT_NE(message.find("cannot reach the TCP store at 127.0.0.1:" +
                         std::to_string(port) + " within 0.2 s"),
            std::string::npos)
      << message;
}

// srun's ranks (Slurm's variables, the store on the step's first node at
// TITAN_STORE_PORT) meet from their environment alone.
TEST(TCPStore, SrunRanksMeetFromSlurmsVariables) {
  int port = freePort();
  std::vector<Exit> exits = runRanks(3, [&](int r) {
    for (const char *var :
         {"RANK", "WORLD_SIZE", "TORCHELASTIC_RUN_ID", "MASTER_ADDR",
          "MASTER_PORT", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
          "PMI_RANK"})
      ::unsetenv(var);
    ::setenv("SLURM_PROCID", std::to_string(r).c_str(), 1);
    ::setenv("SLURM_LOCALID", std::to_string(r).c_str(), 1);
    ::setenv("SLURM_STEP_NUM_TASKS", "3", 1);
    ::setenv("SLURM_STEP_NODELIST", "localhost", 1);
    ::setenv("TITAN_STORE_PORT", std::to_string(port).c_str(), 1);
    Launch launch = launchFromEnvironment();
    if (launch.launcher != Launcher::Slurm || launch.port != port)
      return 3;
    std::unique_ptr<Bootstrap> b = createStoreBootstrap(launch, kTimeout);
    std::array<int64_t, 2> id{};
    if (r == 0)
      id = {42, 3};
    b->broadcast(id.data(), sizeof(id));
    if (id != std::array<int64_t, 2>{42, 3})
      return 2;
    b->barrier();
    b->finish();
    return 0;
  });
  for (int r = 0; r < 3; ++r)
    EXPECT_EQ(exits[size_t(r)].status, 0)
        << "rank " << r << ": " << exits[size_t(r)].stderrText;
}

// Run by torchrun (ctest's store-rendezvous-torchrun): the ranks it starts
// read their places from its environment and exchange an id.
TEST(TCPStore, FromLauncherEnvironment) {
  Launch launch = launchFromEnvironment();
  if (!launch.usesStore())
    GTEST_SKIP() << "not started by torchrun or srun";
  std::unique_ptr<Bootstrap> b = createStoreBootstrap(launch, kTimeout);
  EXPECT_EQ(b->rank(), launch.rank);
  EXPECT_EQ(b->size(), launch.size);
  // Rank 0's id on every rank, then barriers.
  std::array<int64_t, 4> id{};
  if (launch.rank == 0)
    id = {7, 11, 13, launch.size};
  b->broadcast(id.data(), sizeof(id));
  EXPECT_EQ(id, (std::array<int64_t, 4>{7, 11, 13, launch.size}));
  for (int i = 0; i < 3; ++i)
    b->barrier();
  b->finish();
}

// A failing rank while the serving rank waits for the others to finish:
// the serving rank still hears of it (it keeps watching until all have).
TEST(TCPStore, AFailureAtTheEndStillStopsTheServingRank) {
  int port = freePort();
  std::vector<Exit> exits = runRanks(2, [&](int r) {
    std::unique_ptr<Bootstrap> b =
        createStoreBootstrap(launchOf(r, 2, r, port), kTimeout);
    b->barrier();
    if (r == 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      fatal("the last save failed");
    }
    b->finish();
    return 0;
  });
  EXPECT_EQ(exits[0].status, 1);
  EXPECT_NE(exits[0].stderrText.find("stopping: rank 1: the last save failed"),
            std::string::npos)
      << exits[0].stderrText;
}

// Bytes that are not titan's protocol drop that client, not the store.
TEST(TCPStore, GarbageDropsOnlyItsClient) {
  std::unique_ptr<TCPStoreServer> server = loopbackServer();
  ASSERT_TRUE(server);
  int port = server->port();
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(uint16_t(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(
      ::connect(fd, reinterpret_cast<sockaddr *>(&address), sizeof(address)),
      0);
  const char garbage[] = "GET / HTTP/1.1\r\n\r\n";
  ASSERT_GT(::send(fd, garbage, sizeof(garbage), 0), 0);
  char byte;
  EXPECT_EQ(::recv(fd, &byte, 1, 0), 0); // closed by the server
  ::close(fd);
  llvm::Expected<std::unique_ptr<TCPStoreClient>> client =
      TCPStoreClient::connect("127.0.0.1", port, 5);
  ASSERT_TRUE(bool(client));
  EXPECT_EQ(*(*client)->add("still", 1), 1);
}

TEST(TCPStore, AnotherMachinesAddressIsNotServedHere) {
  // TEST-NET-1 (RFC 5737): never an address of this machine.
  llvm::Expected<std::unique_ptr<TCPStoreServer>> server =
      TCPStoreServer::start("192.0.2.1", 0);
  ASSERT_TRUE(bool(server));
  EXPECT_EQ(*server, nullptr);
}

} // namespace
