//===- StoreBootstrap.cpp - NCCL's ranks meet at a TCP store --------------===//
//
// torchrun's and srun's ranks meet at the TCP store at MASTER_ADDR:
// MASTER_PORT (TCPStore.h), served by local rank 0 of that machine: broadcasts
// and barriers are keys numbered in the order every rank calls them, and each
// rank's abort watcher stops it when a peer sets the abort key.
//
//===----------------------------------------------------------------------===//

#include "Bootstrap.h"
#include "Communicator.h"
#include "Error.h"
#include "Launch.h"
#include "TCPStore.h"

#include "llvm/ADT/StringRef.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

using namespace titanrt;

namespace {

class StoreBootstrap;
std::atomic<StoreBootstrap *> liveStore{nullptr};

/// How long a failing rank tries to tell the others.
constexpr double kAbortSeconds = 5;

class StoreBootstrap : public Bootstrap {
public:
  StoreBootstrap(const Launch &launch, double timeoutSeconds)
      : launch_(launch) {
    // Local rank 0 of the machine MASTER_ADDR names serves the store; rank
    // 0 alone when the launcher did not say the local rank.
    if (launch.localRankKnown ? launch.localRank == 0 : launch.rank == 0) {
      llvm::Expected<std::unique_ptr<TCPStoreServer>> server =
          TCPStoreServer::start(launch.host, launch.port);
      if (!server)
        fatal(llvm::toString(server.takeError()));
      server_ = std::move(*server);
    }
    client_ = connect(timeoutSeconds);
    // The failing rank's own watcher sees its message too: that rank is
    // already ending.
    std::string own = "rank " + std::to_string(launch.rank) + ":";
    watcher_ = std::make_unique<AbortWatcher>(
        connect(timeoutSeconds), [this, own](const std::string &message) {
          if (llvm::StringRef(message).starts_with(own))
            return;
          peerFailed(message);
        });
    // The abort has a connection of its own: fatal() may run on any
    // thread while the main one waits on `client_`.
    aborts_ = connect(timeoutSeconds);
    // From here on a failure on this rank stops the others.
    if (launch.size > 1)
      stopEveryRankOnError();
  }
  ~StoreBootstrap() override {
    StoreBootstrap *self = this;
    liveStore.compare_exchange_strong(self, nullptr);
  }

  int rank() const override { return int(launch_.rank); }
  int size() const override { return int(launch_.size); }
  int localRank() const override { return int(launch_.localRank); }
  int localSize() const override { return int(launch_.localSize); }

  void broadcast(void *data, size_t bytes) override {
    std::string key = "broadcast/" + std::to_string(broadcasts_++);
    if (launch_.rank == 0) {
      check(client_->set(key, std::string(static_cast<char *>(data), bytes)));
      return;
    }
    llvm::Expected<std::string> value = client_->get(key);
    if (!value)
      failed(llvm::toString(value.takeError()));
    if (value->size() != bytes)
      fatal("the TCP store's '" + key + "' holds " +
            std::to_string(value->size()) + " bytes, not " +
            std::to_string(bytes) + " (ranks of different executables?)");
    std::memcpy(data, value->data(), bytes);
  }

  void barrier() override {
    check(client_->barrier("barrier/" + std::to_string(barriers_++),
                           launch_.size));
  }

  void stopEveryRankOnError() override {
    liveStore = this;
    setAbortHook(abortEveryRank);
  }

  /// Every rank says it is done; the serving rank keeps the store until
  /// all have (a rank still waiting for a reply would find it gone), and
  /// keeps watching for an abort until then.
  void finish() override {
    if (!server_)
      watcher_.reset();
    llvm::Expected<int64_t> done = client_->add("finished", 1);
    if (!done)
      failed(llvm::toString(done.takeError()));
    if (*done == launch_.size)
      check(client_->set("all-finished", ""));
    if (server_)
      check(client_->get("all-finished").takeError());
    watcher_.reset();
  }

private:
  std::unique_ptr<TCPStoreClient> connect(double timeoutSeconds) {
    llvm::Expected<std::unique_ptr<TCPStoreClient>> client =
        TCPStoreClient::connect(launch_.host, launch_.port, timeoutSeconds);
    if (!client)
      fatal(llvm::toString(client.takeError()));
    return std::move(*client);
  }
  void check(llvm::Error e) {
    if (e)
      failed(llvm::toString(std::move(e)));
  }
  /// A wait that failed because the store went away may be a peer's
  /// failure: the watcher, which received its abort before the store
  /// closed, gets a moment to stop this rank with the peer's message.
  [[noreturn]] void failed(const std::string &message) {
    if (watcher_)
      std::this_thread::sleep_for(std::chrono::seconds(1));
    fatal(message);
  }

  /// fatal()'s hook: tells every rank through the store, then ends.
  static void abortEveryRank(const std::string &message) {
    StoreBootstrap *self = liveStore.load();
    if (Communicator *comm = Communicator::live())
      comm->failing(message);
    if (self) {
      // One abort at a time, and not for long: the store may be gone.
      std::lock_guard<std::mutex> lock(self->abortMutex_);
      self->aborts_->setTimeout(kAbortSeconds);
      llvm::consumeError(self->aborts_->set(
          AbortWatcher::kAbortKey,
          "rank " + std::to_string(self->launch_.rank) + ": " + message));
    }
    std::fflush(stderr);
    std::_Exit(1);
  }

  /// A peer's abort (or the store's end) reached this rank's watcher.
  void peerFailed(const std::string &message) {
    std::fprintf(stderr, "error: stopping: %s\n", message.c_str());
    std::fflush(stderr);
    // The serving rank first lets its server finish telling the others
    // (its thread ends after the pass that woke this watcher).
    server_.reset();
    if (Communicator *comm = Communicator::live())
      comm->failing("a peer failed: " + message);
    std::_Exit(1);
  }

  Launch launch_;
  std::unique_ptr<TCPStoreServer> server_; ///< the serving rank's; last to go
  std::unique_ptr<TCPStoreClient> client_;
  std::unique_ptr<AbortWatcher> watcher_;
  std::unique_ptr<TCPStoreClient> aborts_;
  std::mutex abortMutex_;
  int64_t broadcasts_ = 0, barriers_ = 0;
};

} // namespace

std::unique_ptr<Bootstrap>
titanrt::createStoreBootstrap(const Launch &launch, double timeoutSeconds) {
  return std::make_unique<StoreBootstrap>(launch, timeoutSeconds);
}
