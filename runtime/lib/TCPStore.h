//===- TCPStore.h - the ranks' meeting point without MPI ------------------===//
//
// A key-value store over TCP, as torch.distributed's TCPStore: one rank
// serves it at MASTER_ADDR:MASTER_PORT and every rank (that one included)
// is a client. Ranks without MPI (torchrun, srun) exchange NCCL's unique
// id through it, wait for each other at barriers, and learn that a peer
// failed: a failing rank sets the abort key, and each rank's watcher
// thread, blocked on that key, stops its rank with the peer's message. A
// watcher whose connection drops (the serving rank ended) stops its rank too,
// so a lost peer never leaves the others waiting.
//
// Protocol: a request is op (1 byte), key length (4 bytes), key, value
// length (8 bytes), value; the reply is a length (8 bytes) and its bytes.
// `get` waits until the key is set. Every wait of a client is bounded by
// the store's timeout (comm.init_timeout_seconds), past which it fails
// naming the key and the store's address.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_TCPSTORE_H
#define TITANRT_LIB_TCPSTORE_H

#include "llvm/Support/Error.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

namespace titanrt {

/// The serving rank's side: accepts clients and answers them on a thread of its
/// own until destroyed.
class TCPStoreServer {
public:
  /// Listens at `port` on every interface when `host` names this machine;
  /// null when it is another machine's. An error names the port (in use,
  /// say). Port 0 picks a free one (port() says which; tests use it).
  static llvm::Expected<std::unique_ptr<TCPStoreServer>>
  start(const std::string &host, int port);
  ~TCPStoreServer();
  int port() const { return port_; }

private:
  TCPStoreServer(int listenFd, int port, int wakeRead, int wakeWrite);
  void serve();

  int listenFd_, port_, wakeRead_, wakeWrite_;
  std::thread thread_;
};

/// One connection to the store.
class TCPStoreClient {
public:
  /// Connects to host:port, retrying until `timeoutSeconds` pass (the server
  /// may not listen yet).
  static llvm::Expected<std::unique_ptr<TCPStoreClient>>
  connect(const std::string &host, int port, double timeoutSeconds);
  ~TCPStoreClient();

  llvm::Error set(const std::string &key, const std::string &value);
  /// Waits until `key` is set and returns its value.
  llvm::Expected<std::string> get(const std::string &key);
  /// get() in two halves: watch() returns once the server will send
  /// `key`'s value, watched() waits for it.
  llvm::Error watch(const std::string &key);
  llvm::Expected<std::string> watched(const std::string &key);
  /// Adds `delta` to the integer at `key` (0 when unset); the new value.
  llvm::Expected<int64_t> add(const std::string &key, int64_t delta);
  /// Returns when `size` clients have called barrier(name, size).
  llvm::Error barrier(const std::string &name, int64_t size);

  /// Waits without a deadline (the abort watcher).
  void waitForever() { timeoutSeconds_ = -1; }
  void setTimeout(double seconds) { timeoutSeconds_ = seconds; }
  /// Ends a wait of another thread on this connection (it sees the
  /// connection closed).
  void interrupt();
  std::string address() const;

private:
  TCPStoreClient(int fd, std::string host, int port, double timeoutSeconds);
  llvm::Expected<std::string> request(uint8_t op, const std::string &key,
                                      const std::string &value);
  /// The next reply (`key` names what is waited for in messages).
  llvm::Expected<std::string> reply(const std::string &key);

  int fd_;
  std::string host_;
  int port_;
  double timeoutSeconds_;
  std::string inbox_; ///< received bytes not yet returned
};

/// A thread that waits on the store's abort key and calls `onAbort` with
/// the failing rank's message, or with why the store went away.
class AbortWatcher {
public:
  static constexpr const char *kAbortKey = "titan/abort";
  AbortWatcher(std::unique_ptr<TCPStoreClient> connection,
               std::function<void(const std::string &)> onAbort);
  /// Stops watching (a normal end): the callback is not called.
  ~AbortWatcher();

private:
  std::unique_ptr<TCPStoreClient> connection_;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
};

} // namespace titanrt

#endif // TITANRT_LIB_TCPSTORE_H
