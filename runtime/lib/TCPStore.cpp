//===- TCPStore.cpp - the ranks' meeting point without MPI ----------------===//

#include "TCPStore.h"

#include "titan/Support/Format.h"

#include "llvm/Support/FormatVariadic.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <vector>

using namespace titanrt;

namespace {

/// kWatch is kGet that first acknowledges the wait: the client knows the
/// server will tell it, however soon the key is set.
enum Op : uint8_t { kSet = 0, kGet = 1, kAdd = 2, kWatch = 3 };
constexpr size_t kHeaderBytes = 1 + 4; ///< op, key length
/// The most a request carries: keys are short names, values at most an
/// id or a small table.
constexpr uint32_t kMaxKeyBytes = 4096;
constexpr uint64_t kMaxValueBytes = uint64_t(64) << 20;

llvm::Error storeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message.str());
}

std::string lastErrno() { return std::strerror(errno); }

void appendU64(std::string &out, uint64_t v) {
  out.append(reinterpret_cast<const char *>(&v), sizeof(v));
}

/// Writes all of `bytes`; false when the peer is gone.
bool sendAll(int fd, const std::string &bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n =
        ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    done += size_t(n);
  }
  return true;
}

std::string framed(const std::string &value) {
  std::string out;
  appendU64(out, value.size());
  return out + value;
}

/// One client's bytes so far and the requests they complete.
struct Connection {
  std::string pending;

  /// Whether the bytes so far cannot be titan's protocol (the client is
  /// then dropped): an unknown op, or a key or value past the limits.
  bool malformed = false;

  /// The next whole request in `pending`, removed from it.
  bool takeRequest(Op &op, std::string &key, std::string &value) {
    if (pending.size() < kHeaderBytes)
      return false;
    uint32_t keyBytes;
    std::memcpy(&keyBytes, pending.data() + 1, 4);
    if (uint8_t(pending[0]) > kWatch || keyBytes > kMaxKeyBytes)
      return !(malformed = true);
    size_t valueAt = kHeaderBytes + keyBytes;
    if (pending.size() < valueAt + 8)
      return false;
    uint64_t valueBytes;
    std::memcpy(&valueBytes, pending.data() + valueAt, 8);
    if (valueBytes > kMaxValueBytes)
      return !(malformed = true);
    if (pending.size() < valueAt + 8 + valueBytes)
      return false;
    op = Op(pending[0]);
    key = pending.substr(kHeaderBytes, keyBytes);
    value = pending.substr(valueAt + 8, valueBytes);
    pending.erase(0, valueAt + 8 + valueBytes);
    return true;
  }
};

/// The server's state: the values and the clients waiting for a key.
struct StoreState {
  std::map<std::string, std::string> values;
  std::multimap<std::string, int> waiting;

  /// Answers `op` from client `fd`; false when the reply cannot be sent.
  bool apply(int fd, Op op, const std::string &key, const std::string &value) {
    switch (op) {
    case kSet:
      values[key] = value;
      wake(key);
      return sendAll(fd, framed(""));
    case kWatch:
      if (!sendAll(fd, framed("")))
        return false;
      [[fallthrough]];
    case kGet:
      if (values.count(key))
        return sendAll(fd, framed(values[key]));
      waiting.emplace(key, fd);
      return true;
    case kAdd: {
      int64_t delta = 0, total = 0;
      std::memcpy(&delta, value.data(), std::min(value.size(), sizeof(delta)));
      if (std::string &old = values[key]; old.size() == sizeof(total))
        std::memcpy(&total, old.data(), sizeof(total));
      total += delta;
      values[key] =
          std::string(reinterpret_cast<char *>(&total), sizeof(total));
      wake(key);
      return sendAll(fd, framed(values[key]));
    }
    }
    return false; // not titan's protocol: drop the client
  }
  void wake(const std::string &key) {
    auto [begin, end] = waiting.equal_range(key);
    for (auto it = begin; it != end; ++it)
      sendAll(it->second, framed(values[key]));
    waiting.erase(begin, end);
  }
  void forget(int fd) {
    for (auto it = waiting.begin(); it != waiting.end();)
      it = it->second == fd ? waiting.erase(it) : std::next(it);
  }
};

/// Takes the next connection waiting at `listenFd` into `clients`.
void acceptClient(int listenFd, std::map<int, Connection> &clients) {
  int fd = ::accept4(listenFd, nullptr, nullptr, SOCK_CLOEXEC);
  if (fd >= 0) {
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    clients[fd];
    return;
  }
  // Out of descriptors the connection would stay queued and poll() spin:
  // the serving rank stops, and the others then stop as its store is gone.
  if (errno == EMFILE || errno == ENFILE) {
    rlimit files{};
    ::getrlimit(RLIMIT_NOFILE, &files);
    std::fprintf(stderr,
                 "error: the TCP store cannot accept another rank: %s (%zu "
                 "connections, open-file limit %llu; raise it with ulimit "
                 "-n)\n",
                 lastErrno().c_str(), clients.size(),
                 (unsigned long long)files.rlim_cur);
    std::fflush(stderr);
    std::_Exit(1);
  }
}

} // namespace

namespace {
int boundPort(int fd) {
  sockaddr_storage address{};
  socklen_t length = sizeof(address);
  ::getsockname(fd, reinterpret_cast<sockaddr *>(&address), &length);
  return address.ss_family == AF_INET6
             ? ntohs(reinterpret_cast<sockaddr_in6 *>(&address)->sin6_port)
             : ntohs(reinterpret_cast<sockaddr_in *>(&address)->sin_port);
}
} // namespace

namespace {
/// Whether `host` names this machine: an address of it binds (port 0).
/// Another machine's gives EADDRNOTAVAIL (or, on a host without IPv6,
/// EAFNOSUPPORT for its IPv6 address).
llvm::Expected<bool> isThisMachine(const std::string &host) {
  addrinfo hints{}, *found = nullptr;
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (int rc = ::getaddrinfo(host.c_str(), "0", &hints, &found))
    return storeError("cannot resolve the TCP store's host '" + host +
                      "': " + ::gai_strerror(rc));
  bool here = false;
  for (addrinfo *a = found; a && !here; a = a->ai_next) {
    int fd =
        ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    here = fd >= 0 && ::bind(fd, a->ai_addr, a->ai_addrlen) == 0;
    if (fd >= 0)
      ::close(fd);
  }
  ::freeaddrinfo(found);
  return here;
}

/// A socket listening at `port` on every interface, IPv6 and IPv4 (as
/// PyTorch's TCPStore: `MASTER_ADDR` may resolve, on this machine, to an
/// address others do not reach it by, such as Debian's 127.0.1.1).
int listenEverywhere(int port) {
  int fd = ::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage address{};
  socklen_t length;
  int one = 1, zero = 0;
  if (fd >= 0) {
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    auto *a = reinterpret_cast<sockaddr_in6 *>(&address);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_any;
    a->sin6_port = htons(uint16_t(port));
    length = sizeof(sockaddr_in6);
  } else {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
      return -1;
    auto *a = reinterpret_cast<sockaddr_in *>(&address);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    a->sin_port = htons(uint16_t(port));
    length = sizeof(sockaddr_in);
  }
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd, reinterpret_cast<sockaddr *>(&address), length) == 0 &&
      ::listen(fd, 4096) == 0)
    return fd;
  int saved = errno;
  ::close(fd);
  errno = saved;
  return -1;
}

/// The server holds a few connections per rank: the soft limit on open
/// files (often 1024) is raised to the hard one.
void allowManyConnections() {
  rlimit files;
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 &&
      files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
}
} // namespace

llvm::Expected<std::unique_ptr<TCPStoreServer>>
TCPStoreServer::start(const std::string &host, int port) {
  llvm::Expected<bool> here = isThisMachine(host);
  if (!here)
    return here.takeError();
  if (!*here)
    return nullptr;
  allowManyConnections();
  int fd = listenEverywhere(port);
  if (fd < 0)
    return storeError(llvm::formatv(
        "cannot serve the TCP store on port {0}: {1} (another job's store, "
        "or a rank of this job left behind? set TITAN_STORE_PORT to a free "
        "port)",
        port, lastErrno()));
  int wake[2];
  if (::pipe2(wake, O_CLOEXEC) != 0) {
    ::close(fd);
    return storeError("cannot create the TCP store's pipe: " + lastErrno());
  }
  return std::unique_ptr<TCPStoreServer>(
      new TCPStoreServer(fd, boundPort(fd), wake[0], wake[1]));
}

TCPStoreServer::TCPStoreServer(int listenFd, int port, int wakeRead,
                               int wakeWrite)
    : listenFd_(listenFd), port_(port), wakeRead_(wakeRead),
      wakeWrite_(wakeWrite) {
  thread_ = std::thread([this] { serve(); });
}

TCPStoreServer::~TCPStoreServer() {
  char byte = 0;
  (void)!::write(wakeWrite_, &byte, 1);
  thread_.join();
  ::close(listenFd_);
  ::close(wakeRead_);
  ::close(wakeWrite_);
}

void TCPStoreServer::serve() {
  StoreState state;
  std::map<int, Connection> clients;
  for (;;) {
    std::vector<pollfd> fds{{wakeRead_, POLLIN, 0}, {listenFd_, POLLIN, 0}};
    for (auto &[fd, c] : clients)
      fds.push_back({fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR)
      break;
    if (fds[0].revents)
      break;
    if (fds[1].revents & POLLIN)
      acceptClient(listenFd_, clients);
    for (size_t i = 2; i < fds.size(); ++i) {
      if (!fds[i].revents)
        continue;
      int fd = fds[i].fd;
      char buffer[4096];
      ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
      bool keep = n > 0;
      if (keep) {
        Connection &c = clients[fd];
        c.pending.append(buffer, size_t(n));
        Op op;
        std::string key, value;
        while (keep && c.takeRequest(op, key, value))
          keep = state.apply(fd, op, key, value);
        keep = keep && !c.malformed;
      }
      if (!keep) {
        state.forget(fd);
        clients.erase(fd);
        ::close(fd);
      }
    }
  }
  for (auto &[fd, c] : clients)
    ::close(fd);
}

namespace {
/// connect() on a blocking socket, given up at `deadline`: a machine that
/// drops the handshake would otherwise hold it for minutes.
bool connectBefore(int fd, const addrinfo &a,
                   std::chrono::steady_clock::time_point deadline) {
  int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  int rc = ::connect(fd, a.ai_addr, a.ai_addrlen);
  if (rc != 0 && errno == EINPROGRESS) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLOUT, 0};
    int error = ETIMEDOUT;
    socklen_t length = sizeof(error);
    if (::poll(&p, 1, int(std::max<int64_t>(left.count(), 1))) == 1)
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length);
    errno = error;
    rc = error == 0 ? 0 : -1;
  }
  ::fcntl(fd, F_SETFL, flags);
  return rc == 0;
}
} // namespace

llvm::Expected<std::unique_ptr<TCPStoreClient>>
TCPStoreClient::connect(const std::string &host, int port,
                        double timeoutSeconds) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::duration<double>(timeoutSeconds));
  std::string why;
  do {
    addrinfo hints{}, *found = nullptr;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints,
                           &found);
    if (rc != 0) {
      why = ::gai_strerror(rc);
    } else {
      for (addrinfo *a = found; a; a = a->ai_next) {
        int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC,
                          a->ai_protocol);
        if (fd < 0)
          continue;
        if (connectBefore(fd, *a, deadline)) {
          ::freeaddrinfo(found);
          int one = 1;
          ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
          return std::unique_ptr<TCPStoreClient>(
              new TCPStoreClient(fd, host, port, timeoutSeconds));
        }
        why = lastErrno();
        ::close(fd);
      }
      ::freeaddrinfo(found);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  return storeError(llvm::formatv(
      "cannot reach the TCP store at {0}:{1} within {2} s ({3}); is local "
      "rank 0 of that machine running, and is the store's address "
      "(MASTER_ADDR, MASTER_PORT or TITAN_STORE_PORT; under srun the step's "
      "first node) the same on every rank?",
      host, port, titan::formatNumber(timeoutSeconds), why));
}

TCPStoreClient::TCPStoreClient(int fd, std::string host, int port,
                               double timeoutSeconds)
    : fd_(fd), host_(std::move(host)), port_(port),
      timeoutSeconds_(timeoutSeconds) {}

TCPStoreClient::~TCPStoreClient() { ::close(fd_); }

std::string TCPStoreClient::address() const {
  return host_ + ":" + std::to_string(port_);
}

void TCPStoreClient::interrupt() { ::shutdown(fd_, SHUT_RDWR); }

llvm::Expected<std::string> TCPStoreClient::request(uint8_t op,
                                                    const std::string &key,
                                                    const std::string &value) {
  std::string message(1, char(op));
  uint32_t keyBytes = uint32_t(key.size());
  message.append(reinterpret_cast<const char *>(&keyBytes), 4);
  message += key;
  appendU64(message, value.size());
  message += value;
  if (!sendAll(fd_, message))
    return storeError("lost the TCP store at " + address() +
                      " (the serving rank ended?) while asking for '" + key +
                      "'");
  return reply(key);
}

llvm::Expected<std::string> TCPStoreClient::reply(const std::string &key) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration<double>(timeoutSeconds_);
  auto whole = [&] {
    uint64_t bytes = 0;
    if (inbox_.size() >= 8)
      std::memcpy(&bytes, inbox_.data(), 8);
    return inbox_.size() >= 8 && inbox_.size() >= 8 + bytes;
  };
  while (!whole()) {
    int waitMs = -1;
    if (timeoutSeconds_ >= 0) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0)
        return storeError(llvm::formatv(
            "waited {0} s for '{1}' at the TCP store {2} "
            "(comm.init_timeout_seconds); a rank has not arrived",
            titan::formatNumber(timeoutSeconds_), key, address()));
      waitMs = int(std::min<int64_t>(left.count(), 1000));
    }
    pollfd p{fd_, POLLIN, 0};
    int ready = ::poll(&p, 1, waitMs);
    if (ready == 0 || (ready < 0 && errno == EINTR))
      continue;
    char buffer[4096];
    ssize_t n = ::recv(fd_, buffer, sizeof(buffer), 0);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return storeError("lost the TCP store at " + address() +
                        " (the serving rank ended?) while waiting for '" + key +
                        "'");
    inbox_.append(buffer, size_t(n));
  }
  uint64_t bytes;
  std::memcpy(&bytes, inbox_.data(), 8);
  std::string value = inbox_.substr(8, bytes);
  inbox_.erase(0, 8 + bytes);
  return value;
}

llvm::Error TCPStoreClient::set(const std::string &key,
                                const std::string &value) {
  return request(kSet, key, value).takeError();
}

llvm::Expected<std::string> TCPStoreClient::get(const std::string &key) {
  return request(kGet, key, "");
}

llvm::Error TCPStoreClient::watch(const std::string &key) {
  return request(kWatch, key, "").takeError();
}

llvm::Expected<std::string> TCPStoreClient::watched(const std::string &key) {
  return reply(key);
}

llvm::Expected<int64_t> TCPStoreClient::add(const std::string &key,
                                            int64_t delta) {
  llvm::Expected<std::string> total = request(
      kAdd, key, std::string(reinterpret_cast<char *>(&delta), sizeof(delta)));
  if (!total)
    return total.takeError();
  int64_t value = 0;
  std::memcpy(&value, total->data(), std::min(total->size(), sizeof(value)));
  return value;
}

llvm::Error TCPStoreClient::barrier(const std::string &name, int64_t size) {
  llvm::Expected<int64_t> arrived = add(name + "/arrived", 1);
  if (!arrived)
    return arrived.takeError();
  if (*arrived == size)
    if (llvm::Error e = set(name + "/done", ""))
      return e;
  return get(name + "/done").takeError();
}

AbortWatcher::AbortWatcher(std::unique_ptr<TCPStoreClient> connection,
                           std::function<void(const std::string &)> onAbort)
    : connection_(std::move(connection)) {
  // Registered before the constructor returns: an abort set later always
  // reaches this watcher, even if the store's server ends right after.
  if (llvm::Error e = connection_->watch(kAbortKey))
    onAbort(llvm::toString(std::move(e)));
  connection_->waitForever();
  thread_ = std::thread([this, onAbort = std::move(onAbort)] {
    llvm::Expected<std::string> message = connection_->watched(kAbortKey);
    if (stopping_)
      return llvm::consumeError(message.takeError());
    onAbort(message ? *message : llvm::toString(message.takeError()));
  });
}

AbortWatcher::~AbortWatcher() {
  stopping_ = true;
  connection_->interrupt();
  thread_.join();
}
