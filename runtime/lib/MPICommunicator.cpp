//===- MPICommunicator.cpp - collectives over MPI -------------------------===//
//
// Nonblocking MPI collectives (MPI-3) on sub-communicators split from
// MPI_COMM_WORLD per subset of mesh axes. Gathers and scatters along a
// dimension other than the outermost go through a staging buffer in
// rank-major block order, rearranged when the request finishes.
//
// MPI-3's element counts are C ints and Open MPI 4 has no MPI-4 large-count
// calls, so a collective of more than 2^31 - 1 elements per message is
// issued as several messages of at most that many: chunked all-reduces and
// broadcasts, and gathers, scatters and all-to-alls decomposed into
// per-root broadcasts and reductions or point-to-point pairs, so that every
// piece stays contiguous and uses MPI's own reduction operations.
//
// MPI progresses a nonblocking collective only inside MPI calls, so a
// collective issued by the step would move only once finish() waits for
// it. The progress thread makes every MPI call of the communicator (issue,
// test, groups, barrier) and tests the collectives in flight while the
// step computes; finish() only blocks until the thread has seen its
// collective complete. The same calls in the same order on every rank: the
// results are those without the thread, bit for bit.
// debug.no_comm_overlap runs without it.
//
//===----------------------------------------------------------------------===//

#include "Bootstrap.h"
#include "Communicator.h"
#include "Error.h"
#include "LowPrecision.h"
#include "RankShutdown.h"
#include "Trace.h"

#include "llvm/ADT/STLExtras.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace titanrt;

namespace {

void check(int rc, const char *what) {
  if (rc != MPI_SUCCESS) {
    char message[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, message, &len);
    fatal(std::string("MPI ") + what + " failed: " + std::string(message, len));
  }
}

/// The most elements one MPI message carries: a C int, or less when
/// TITAN_MPI_MAX_COUNT says so (tests use it to drive the chunked path with
/// small tensors).
int64_t maxMessageCount() {
  static const int64_t limit = [] {
    int64_t intMax = std::numeric_limits<int>::max();
    const char *env = std::getenv("TITAN_MPI_MAX_COUNT");
    if (!env || !*env)
      return intMax;
    char *end = nullptr;
    long long v = std::strtoll(env, &end, 10);
    if (*end || v < 1 || v > intMax)
      fatal(std::string("TITAN_MPI_MAX_COUNT='") + env +
            "' is not an element count in [1, 2^31 - 1]");
    return int64_t(v);
  }();
  return limit;
}

/// Calls `issue(offset, length)` for consecutive pieces of `count` elements,
/// each at most maxMessageCount() long.
template <typename Issue> void forEachPiece(int64_t count, Issue issue) {
  int64_t limit = maxMessageCount();
  for (int64_t offset = 0; offset < count; offset += limit)
    issue(offset, int(std::min(limit, count - offset)));
}

/// MPI has no 16- or 8-bit floats: they travel as unsigned integers of
/// their width, and reductions on them use the operations below.
MPI_Datatype mpiType(Dtype type) {
  switch (type) {
  case Dtype::f32:
    return MPI_FLOAT;
  case Dtype::f64:
    return MPI_DOUBLE;
  case Dtype::i32:
    return MPI_INT32_T;
  case Dtype::i64:
    return MPI_INT64_T;
  case Dtype::bf16:
  case Dtype::f16:
    return MPI_UINT16_T;
  case Dtype::f8E4M3FN:
  case Dtype::f8E5M2:
    return MPI_UINT8_T;
  }
  return MPI_DATATYPE_NULL;
}

/// Elementwise sum or max of 16-bit floats, in float, rounded to nearest
/// even (each combining step rounds, as a GPU's reduction in the type does).
template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float), bool Max>
void combine16(void *in, void *inout, int *len, MPI_Datatype *) {
  const auto *a = static_cast<const uint16_t *>(in);
  auto *b = static_cast<uint16_t *>(inout);
  for (int i = 0; i < *len; ++i) {
    float x = ToFloat(a[i]), y = ToFloat(b[i]);
    b[i] = FromFloat(Max ? std::max(x, y) : x + y);
  }
}

/// The MPI operation that sums (or takes the maximum of) elements of `type`.
MPI_Op mpiOp(Dtype type, bool max) {
  if (type != Dtype::bf16 && type != Dtype::f16) {
    if (type == Dtype::f8E4M3FN || type == Dtype::f8E5M2)
      fatal(std::string("the MPI communicator cannot reduce ") +
            dtypeName(type) +
            " buffers (8-bit floats are gathered, not summed)");
    return max ? MPI_MAX : MPI_SUM;
  }
  static MPI_Op ops[2][2] = {{MPI_OP_NULL, MPI_OP_NULL},
                             {MPI_OP_NULL, MPI_OP_NULL}};
  MPI_Op &op = ops[type == Dtype::f16][max];
  if (op == MPI_OP_NULL) {
    MPI_User_function *fn =
        type == Dtype::bf16 ? (max ? combine16<bf16ToFloat, floatToBf16, true>
                                   : combine16<bf16ToFloat, floatToBf16, false>)
                            : (max ? combine16<f16ToFloat, floatToF16, true>
                                   : combine16<f16ToFloat, floatToF16, false>);
    check(MPI_Op_create(fn, /*commute=*/1, &op), "op create");
  }
  return op;
}

/// Divides `count` elements of `type` by `n` in place (rounded to the type).
void divideInPlace(void *data, Dtype type, int64_t count, double n) {
  switch (type) {
  case Dtype::f64:
    for (int64_t i = 0; i < count; ++i)
      static_cast<double *>(data)[i] /= n;
    return;
  case Dtype::f32:
    for (int64_t i = 0; i < count; ++i)
      static_cast<float *>(data)[i] = float(static_cast<float *>(data)[i] / n);
    return;
  case Dtype::bf16:
  case Dtype::f16: {
    bool bf16 = type == Dtype::bf16;
    auto *h = static_cast<uint16_t *>(data);
    for (int64_t i = 0; i < count; ++i) {
      float x = bf16 ? bf16ToFloat(h[i]) : f16ToFloat(h[i]);
      float q = float(x / n);
      h[i] = bf16 ? floatToBf16(q) : floatToF16(q);
    }
    return;
  }
  default:
    fatal(std::string("the MPI communicator cannot average ") +
          dtypeName(type) + " buffers");
  }
}

/// Point-to-point tags, distinct so that a shift and a chunked all-to-all
/// on one communicator never match each other's messages.
constexpr int kSendRecvTag = 0;
constexpr int kAllToAllTag = 1;

/// Every rank stops: a rank that failed must not leave the others waiting
/// in a collective forever. The communicator first dumps its flight record
/// and asks its peers to dump theirs (Communicator::failing).
void abortEveryRank(const std::string &message) {
  if (Communicator *comm = Communicator::live())
    comm->failing(message);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/// Tags on the flight recorder's own communicator: "dump your record"
/// (carrying the failing rank) and its acknowledgement.
constexpr int kDumpTag = 0, kDumpAckTag = 1;

/// The MPI state of one collective: shared by its Request and the progress
/// thread, so that a request dropped unfinished never frees what MPI still
/// writes.
struct Pending {
  const char *collective;
  unsigned axisMask;
  int64_t bytes;
  /// The MPI requests of the operation's messages (one in the common case).
  std::vector<MPI_Request> requests;
  MPI_Request *add() { return &requests.emplace_back(MPI_REQUEST_NULL); }
  std::vector<char> staging;
  double issued = 0;
  int64_t record = -1; ///< flight-recorder entry
  /// Set by whichever thread sees the requests complete.
  std::atomic<bool> done{false};
};

class MPICommunicator;

/// A pending collective and what to do once it completes.
struct MPIRequest : Request {
  MPIRequest(MPICommunicator &comm, std::shared_ptr<Pending> pending)
      : comm(comm), pending(std::move(pending)) {}
  MPICommunicator &comm;
  std::shared_ptr<Pending> pending;
  std::function<void()> then;
  bool finished = false;
  /// `bytes` of scratch: the planned `staging` when given, else owned.
  char *scratch(int64_t bytes, void *planned) {
    if (planned)
      return static_cast<char *>(planned);
    pending->staging.resize(size_t(bytes));
    return pending->staging.data();
  }
  void finish() override;
  bool test() override;
  /// Runs `then` once, after completion, on the caller's thread.
  void complete() {
    if (finished)
      return;
    finished = true;
    if (then)
      then();
  }
};

/// Moves a tensor split along a middle dimension between its natural layout
/// [outer][total rows] and rank-major [parts][outer][rows] (each part `rows`
/// rows of `rowBytes`). `total` may be less than parts x rows (uneven FSDP
/// shards): rank-major padding rows are zero-filled, or dropped going back.
void rearrange(const char *src, char *dst, int64_t outer, int64_t parts,
               int64_t rows, int64_t total, int64_t rowBytes,
               bool toRankMajor) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t p = 0; p < parts; ++p) {
      int64_t valid = std::clamp<int64_t>(total - p * rows, 0, rows);
      int64_t natural = (o * total + p * rows) * rowBytes;
      int64_t rankMajor = (p * outer + o) * rows * rowBytes;
      if (toRankMajor) {
        std::memcpy(dst + rankMajor, src + natural, valid * rowBytes);
        std::memset(dst + rankMajor + valid * rowBytes, 0,
                    (rows - valid) * rowBytes);
      } else {
        std::memcpy(dst + natural, src + rankMajor, valid * rowBytes);
      }
    }
}

class MPICommunicator : public Communicator {
public:
  explicit MPICommunicator(const std::vector<int64_t> &meshShape) {
    mesh_ = meshShape;
    bootstrapMPI();
    // Queried once: the pipeline asks from the compute thread, which makes
    // no MPI call while the progress thread runs.
    void *value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found);
    // MPI guarantees at least 32767.
    tagUpperBound_ = found ? *static_cast<int *>(value) : 32767;
    // The flight recorder's requests to dump travel apart from every
    // collective's messages.
    check(MPI_Comm_dup(MPI_COMM_WORLD, &dumpComm_), "comm dup");
  }

  ~MPICommunicator() override {
    // Joined before MPI_Finalize (shutdownCommunicator finalizes after).
    setProgressThread(false);
    for (auto &[mask, comm] : groups_)
      MPI_Comm_free(&comm);
    MPI_Comm_free(&dumpComm_);
  }

  std::unique_ptr<Request> allGather(const void *in, void *out, Dtype type,
                                     int64_t outer, int64_t dimSize,
                                     int64_t inner, int64_t gatheredSize,
                                     unsigned axisMask,
                                     void *staging) override {
    auto req = request("all_gather", axisMask);
    int64_t parts = groupSize(axisMask);
    int64_t count = outer * dimSize * inner;
    void *dst = out;
    if (outer > 1 || gatheredSize != parts * dimSize) {
      char *gathered = req->scratch(parts * count * dtypeBytes(type), staging);
      dst = gathered;
      char *final = static_cast<char *>(out);
      int64_t rowBytes = inner * dtypeBytes(type);
      req->then = [gathered, final, outer, parts, dimSize, gatheredSize,
                   rowBytes] {
        rearrange(gathered, final, outer, parts, dimSize, gatheredSize,
                  rowBytes, /*toRankMajor=*/false);
      };
    }
    return start(std::move(req), type, parts * count, [=](Pending &pend) {
      MPI_Comm comm = group(axisMask);
      if (count <= maxMessageCount()) {
        check(MPI_Iallgather(in, int(count), mpiType(type), dst, int(count),
                             mpiType(type), comm, pend.add()),
              "all_gather");
        return;
      }
      // Too large for one message: each rank broadcasts its block in pieces.
      int me = 0;
      MPI_Comm_rank(comm, &me);
      int64_t bytes = dtypeBytes(type);
      char *blocks = static_cast<char *>(dst);
      std::memmove(blocks + me * count * bytes, in, count * bytes);
      forEachPiece(count, [&](int64_t offset, int length) {
        for (int64_t p = 0; p < parts; ++p)
          check(MPI_Ibcast(blocks + (p * count + offset) * bytes, length,
                           mpiType(type), int(p), comm, pend.add()),
                "all_gather");
      });
    });
  }

  std::unique_ptr<Request> reduceScatter(const void *in, void *out, Dtype type,
                                         int64_t outer, int64_t dimSize,
                                         int64_t inner, unsigned axisMask,
                                         void *staging) override {
    auto req = request("reduce_scatter", axisMask);
    int64_t parts = groupSize(axisMask);
    int64_t rows = (dimSize + parts - 1) / parts;
    int64_t count = outer * rows * inner;
    const void *src = in;
    if (outer > 1 || rows * parts != dimSize) {
      char *packed = req->scratch(parts * count * dtypeBytes(type), staging);
      rearrange(static_cast<const char *>(in), packed, outer, parts, rows,
                dimSize, inner * dtypeBytes(type), /*toRankMajor=*/true);
      src = packed;
    }
    return start(std::move(req), type, parts * count, [=](Pending &pend) {
      MPI_Comm comm = group(axisMask);
      MPI_Op op = mpiOp(type, /*max=*/false);
      if (count <= maxMessageCount()) {
        check(MPI_Ireduce_scatter_block(src, out, int(count), mpiType(type), op,
                                        comm, pend.add()),
              "reduce_scatter");
        return;
      }
      // Too large for one message: block p is reduced onto rank p in pieces.
      int me = 0;
      MPI_Comm_rank(comm, &me);
      int64_t bytes = dtypeBytes(type);
      const char *blocks = static_cast<const char *>(src);
      char *mine = static_cast<char *>(out);
      forEachPiece(count, [&](int64_t offset, int length) {
        for (int64_t p = 0; p < parts; ++p)
          check(MPI_Ireduce(blocks + (p * count + offset) * bytes,
                            p == me ? mine + offset * bytes : nullptr, length,
                            mpiType(type), op, int(p), comm, pend.add()),
                "reduce_scatter");
      });
    });
  }

  std::unique_ptr<Request> allReduce(const void *in, void *out, Dtype type,
                                     int64_t count, Reduction reduction,
                                     unsigned axisMask) override {
    auto req = request("all_reduce", axisMask);
    if (reduction == Reduction::Average) {
      double n = double(groupSize(axisMask));
      req->then = [out, count, type, n] { divideInPlace(out, type, count, n); };
    }
    return start(std::move(req), type, count, [=](Pending &pend) {
      MPI_Op op = mpiOp(type, reduction == Reduction::Max);
      int64_t bytes = dtypeBytes(type);
      forEachPiece(count, [&](int64_t offset, int length) {
        check(MPI_Iallreduce(static_cast<const char *>(in) + offset * bytes,
                             static_cast<char *>(out) + offset * bytes, length,
                             mpiType(type), op, group(axisMask), pend.add()),
              "all_reduce");
      });
    });
  }

  std::unique_ptr<Request> allToAll(const void *in, void *out, Dtype type,
                                    int64_t splitOuter, int64_t splitDim,
                                    int64_t splitInner, int64_t concatOuter,
                                    int64_t concatDim, int64_t concatInner,
                                    unsigned axisMask, void *staging) override {
    auto req = request("all_to_all", axisMask);
    int64_t parts = groupSize(axisMask);
    // Pack part p (a slice of the split dimension) contiguously, rank-major.
    int64_t total = splitOuter * splitDim * splitInner * dtypeBytes(type);
    char *send = req->scratch(2 * total, staging);
    rearrange(static_cast<const char *>(in), send, splitOuter, parts,
              splitDim / parts, splitDim, splitInner * dtypeBytes(type),
              /*toRankMajor=*/true);
    char *recv = send + total;
    int64_t count = total / dtypeBytes(type) / parts;
    char *final = static_cast<char *>(out);
    int64_t rowBytes = concatInner * dtypeBytes(type);
    // Part q from rank q lands at offset q of the concat dimension.
    req->then = [recv, final, concatOuter, parts, concatDim, rowBytes] {
      rearrange(recv, final, concatOuter, parts, concatDim, parts * concatDim,
                rowBytes, /*toRankMajor=*/false);
    };
    return start(std::move(req), type, parts * count, [=](Pending &pend) {
      MPI_Comm comm = group(axisMask);
      if (count <= maxMessageCount()) {
        check(MPI_Ialltoall(send, int(count), mpiType(type), recv, int(count),
                            mpiType(type), comm, pend.add()),
              "all_to_all");
        return;
      }
      // Too large for one message: a send/receive pair per peer and piece.
      int64_t bytes = dtypeBytes(type);
      forEachPiece(count, [&](int64_t offset, int length) {
        for (int64_t q = 0; q < parts; ++q) {
          int64_t at = (q * count + offset) * bytes;
          check(MPI_Irecv(recv + at, length, mpiType(type), int(q),
                          kAllToAllTag, comm, pend.add()),
                "all_to_all");
          check(MPI_Isend(send + at, length, mpiType(type), int(q),
                          kAllToAllTag, comm, pend.add()),
                "all_to_all");
        }
      });
    });
  }

  std::unique_ptr<Request> broadcast(const void *in, void *out, Dtype type,
                                     int64_t count, int64_t root,
                                     unsigned axisMask) override {
    auto req = request("broadcast", axisMask);
    if (in != out)
      std::memcpy(out, in, count * dtypeBytes(type));
    return start(std::move(req), type, count, [=](Pending &pend) {
      int64_t bytes = dtypeBytes(type);
      forEachPiece(count, [&](int64_t offset, int length) {
        check(MPI_Ibcast(static_cast<char *>(out) + offset * bytes, length,
                         mpiType(type), int(root), group(axisMask), pend.add()),
              "broadcast");
      });
    });
  }

  std::unique_ptr<Request> sendRecv(const void *in, void *out, Dtype type,
                                    int64_t count, int64_t shift,
                                    unsigned axisMask) override {
    auto req = request("send_recv", axisMask);
    return start(std::move(req), type, count, [=](Pending &pend) {
      MPI_Comm comm = group(axisMask);
      int size = 0, me = 0;
      MPI_Comm_size(comm, &size);
      MPI_Comm_rank(comm, &me);
      int to = int(((me + shift) % size + size) % size);
      int from = int(((me - shift) % size + size) % size);
      int64_t bytes = dtypeBytes(type);
      forEachPiece(count, [&](int64_t offset, int length) {
        check(MPI_Irecv(static_cast<char *>(out) + offset * bytes, length,
                        mpiType(type), from, kSendRecvTag, comm, pend.add()),
              "recv");
        check(MPI_Isend(static_cast<const char *>(in) + offset * bytes, length,
                        mpiType(type), to, kSendRecvTag, comm, pend.add()),
              "send");
      });
    });
  }

  std::unique_ptr<Request> send(const void *in, Dtype type, int64_t count,
                                int64_t peer, PeerFlow, int tag) override {
    // MPI matches by tag, so the flow needs no channel of its own.
    return pointToPoint(request("send", 1u << kPP), const_cast<void *>(in),
                        /*sending=*/true, type, count, peer, tag);
  }

  std::unique_ptr<Request> recv(void *out, Dtype type, int64_t count,
                                int64_t peer, PeerFlow, int tag) override {
    return pointToPoint(request("recv", 1u << kPP), out, /*sending=*/false,
                        type, count, peer, tag);
  }

  /// A pipeline transfer with the stage `peer` (send reads `buffer`, recv
  /// writes it), in pieces of at most maxMessageCount() elements.
  std::unique_ptr<Request> pointToPoint(std::unique_ptr<MPIRequest> req,
                                        void *buffer, bool sending, Dtype type,
                                        int64_t count, int64_t peer, int tag) {
    const char *name = sending ? "send" : "recv";
    return start(
        std::move(req), type, count,
        [=](Pending &pend) {
          int64_t bytes = dtypeBytes(type);
          // The pp group is ordered by world rank, i.e. by pipeline
          // coordinate.
          MPI_Comm comm = group(1u << kPP);
          forEachPiece(count, [&](int64_t offset, int length) {
            char *piece = static_cast<char *>(buffer) + offset * bytes;
            check(sending ? MPI_Isend(piece, length, mpiType(type), int(peer),
                                      tag, comm, pend.add())
                          : MPI_Irecv(piece, length, mpiType(type), int(peer),
                                      tag, comm, pend.add()),
                  name);
          });
        },
        peerWorldRank(peer));
  }

  int maxPeerTag() const override { return tagUpperBound_; }

  void prepareGroups(const std::vector<unsigned> &axisMasks) override {
    call([&] {
      for (unsigned mask : axisMasks)
        group(mask);
    });
  }

  void barrier() override {
    call([] { check(MPI_Barrier(MPI_COMM_WORLD), "barrier"); });
  }

  void setProgressThread(bool on) override;
  bool progressThread() const override { return running_; }
  void failing(const std::string &reason) override;

  /// Blocks until `pend` completes, up to the [comm] timeout.
  void wait(Pending &pend);
  /// Whether `pend` has completed, without blocking.
  bool poll(Pending &pend);

private:
  std::unique_ptr<MPIRequest> request(const char *collective,
                                      unsigned axisMask) {
    auto pending = std::make_shared<Pending>();
    pending->collective = collective;
    pending->axisMask = axisMask;
    return std::make_unique<MPIRequest>(*this, std::move(pending));
  }

  /// Issues the collective of `req`, `count` elements of `type` in its
  /// larger buffer (nccl-tests' size): on the progress thread when it runs
  /// (in issue order, so every rank's order on a communicator is its
  /// program's), else now.
  std::unique_ptr<Request> start(std::unique_ptr<MPIRequest> req, Dtype type,
                                 int64_t count,
                                 std::function<void(Pending &)> issue,
                                 int64_t peer = -1);
  /// Marks `pend` complete (on the thread that saw it) and wakes waiters.
  void completed(Pending &pend);

  /// Runs `fn`, which makes MPI calls, on the thread that may make them,
  /// and returns when it has run.
  void call(const std::function<void()> &fn);
  void submit(std::function<void()> task);
  bool onProgressThread() const {
    return std::this_thread::get_id() == threadId_.load();
  }
  void progressLoop();
  /// Tests every collective issued on the progress thread; true when one
  /// completed.
  bool pollActive();
  /// A failing peer's request for this rank's flight record.
  void pollDumpRequest();
  /// Asks every other rank to dump its flight record and waits a moment
  /// for their answers (on the thread that may call MPI).
  void askPeersToDump();

  /// The communicator of the ranks that share this rank's coordinates on
  /// every axis outside `axisMask`, ordered by rank. Called only by the
  /// thread that makes the MPI calls.
  MPI_Comm group(unsigned axisMask) {
    auto it = groups_.find(axisMask);
    if (it != groups_.end())
      return it->second;
    MPI_Comm comm;
    check(
        MPI_Comm_split(MPI_COMM_WORLD, int(groupColor(axisMask)), rank_, &comm),
        "comm split");
    groups_[axisMask] = comm;
    return comm;
  }

  std::map<unsigned, MPI_Comm> groups_;
  int tagUpperBound_ = 32767;
  MPI_Comm dumpComm_ = MPI_COMM_NULL;

  // The progress thread. mutex_ guards tasks_ and stopping_, and orders
  // each Pending's `done` with the waiters of doneCv_.
  std::thread thread_;
  std::atomic<std::thread::id> threadId_{};
  std::atomic<bool> running_{false};
  /// Threads blocked in wait(): while any is, the progress thread polls
  /// without sleeping (a wait is exposed communication).
  std::atomic<int> waiters_{0};
  std::mutex mutex_;
  std::condition_variable wake_, doneCv_;
  std::deque<std::function<void()>> tasks_;
  bool stopping_ = false;
  /// Collectives issued on the thread and not yet complete (its own).
  std::vector<std::shared_ptr<Pending>> active_;
  /// The posted receive of a failing peer's "dump your flight record".
  MPI_Request dumpRequest_ = MPI_REQUEST_NULL;
  int dumpSignal_ = -1, dumpAck_ = 0, dumpAsk_ = 0;
};

/// The thread level MPI was initialized with.
int threadLevel = MPI_THREAD_SINGLE;

void MPIRequest::finish() {
  comm.wait(*pending);
  complete();
}

bool MPIRequest::test() {
  if (!comm.poll(*pending))
    return false;
  complete();
  return true;
}

std::unique_ptr<Request>
MPICommunicator::start(std::unique_ptr<MPIRequest> req, Dtype type,
                       int64_t count, std::function<void(Pending &)> issue,
                       int64_t peer) {
  Pending &pend = *req->pending;
  pend.issued = StepTrace::now();
  pend.bytes = count * dtypeBytes(type);
  pend.record = recordIssued(pend.collective, pend.axisMask, type, count,
                             pend.issued, peer);
  if (!running_) {
    issue(pend);
    return req;
  }
  submit([this, pending = req->pending, issue = std::move(issue)] {
    issue(*pending);
    active_.push_back(pending);
  });
  return req;
}

void MPICommunicator::completed(Pending &pend) {
  double now = StepTrace::now();
  trace::collective(pend.collective, pend.axisMask, pend.bytes, pend.issued,
                    now);
  recordCompleted(pend.record, now);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    pend.done.store(true, std::memory_order_release);
  }
  doneCv_.notify_all();
}

bool MPICommunicator::poll(Pending &pend) {
  if (pend.done.load(std::memory_order_acquire))
    return true;
  if (running_)
    return false; // the progress thread tests it
  int done = 0;
  check(MPI_Testall(int(pend.requests.size()), pend.requests.data(), &done,
                    MPI_STATUSES_IGNORE),
        "test");
  if (done)
    completed(pend);
  return done;
}

void MPICommunicator::wait(Pending &pend) {
  if (pend.done.load(std::memory_order_acquire))
    return;
  double begin = StepTrace::now();
  auto start = std::chrono::steady_clock::now();
  auto timedOut = [&] {
    fatal(Communicator::timeoutMessage(pend.collective, pend.axisMask,
                                       context(), timeoutSeconds()));
  };
  if (running_) {
    // A collective about to complete costs no sleep and wake-up.
    for (int i = 0; i < 64 && !pend.done.load(std::memory_order_acquire); ++i)
      std::this_thread::yield();
    auto deadline =
        start + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                    std::chrono::duration<double>(timeoutSeconds()));
    waiters_.fetch_add(1);
    wake_.notify_one();
    std::unique_lock<std::mutex> lock(mutex_);
    bool done = doneCv_.wait_until(lock, deadline, [&] {
      return pend.done.load(std::memory_order_acquire);
    });
    waiters_.fetch_sub(1);
    if (!done) {
      lock.unlock();
      timedOut();
    }
  } else {
    // Without the thread MPI progresses only in its calls: poll, up to the
    // communicator's timeout; past it every rank is aborted with a message
    // naming the collective (a stopped or lost peer must not hang the job).
    while (!poll(pend)) {
      double waited = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      if (waited > timeoutSeconds())
        timedOut();
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
  }
  trace::wait(pend.collective, pend.axisMask, pend.bytes, begin,
              StepTrace::now());
}

void MPICommunicator::submit(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tasks_.push_back(std::move(task));
  }
  wake_.notify_one();
}

void MPICommunicator::call(const std::function<void()> &fn) {
  if (!running_ || onProgressThread())
    return fn();
  std::promise<void> ran;
  submit([&] {
    fn();
    ran.set_value();
  });
  ran.get_future().wait();
}

void MPICommunicator::setProgressThread(bool on) {
  if (on == running_.load())
    return;
  if (!on) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    thread_.join();
    running_ = false;
    threadId_ = std::thread::id();
    // Collectives still in flight are finished by their requests' polls.
    active_.clear();
    if (dumpRequest_ != MPI_REQUEST_NULL) {
      MPI_Cancel(&dumpRequest_);
      MPI_Wait(&dumpRequest_, MPI_STATUS_IGNORE);
    }
    return;
  }
  // Every MPI call of this communicator is made by one thread at a time:
  // the progress thread while it runs, the caller's otherwise (it is off
  // before start-up ends and after shutdown begins). That is
  // MPI_THREAD_SERIALIZED; FUNNELED would tie the calls to the thread that
  // initialized MPI, and MULTIPLE costs the library locks it does not need.
  if (threadLevel < MPI_THREAD_SERIALIZED) {
    if (rank_ == 0)
      std::fprintf(stderr,
                   "warning: the MPI library provides no "
                   "MPI_THREAD_SERIALIZED; communication progresses only "
                   "while a collective is waited for\n");
    return;
  }
  stopping_ = false;
  if (size_ > 1 && dumpRequest_ == MPI_REQUEST_NULL)
    check(MPI_Irecv(&dumpSignal_, 1, MPI_INT, MPI_ANY_SOURCE, kDumpTag,
                    dumpComm_, &dumpRequest_),
          "recv");
  running_ = true;
  thread_ = std::thread([this] { progressLoop(); });
}

void MPICommunicator::progressLoop() {
  threadId_ = std::this_thread::get_id();
  // Polls while collectives are in flight, backing off (yield, then short
  // sleeps) when none completes, so that ranks oversubscribing the cores
  // leave them to compute; parks when none is in flight (waking now and
  // then to look for a failing peer's request for its flight record).
  int idle = 0;
  std::unique_lock<std::mutex> lock(mutex_);
  auto woken = [&] { return !tasks_.empty() || stopping_; };
  for (;;) {
    if (tasks_.empty()) {
      if (stopping_)
        break;
      if (active_.empty()) {
        if (dumpRequest_ != MPI_REQUEST_NULL)
          wake_.wait_for(lock, std::chrono::milliseconds(50), woken);
        else
          wake_.wait(lock, woken);
      } else if (idle > 64 && waiters_.load() == 0) {
        auto pause = std::chrono::microseconds(idle > 1024 ? 200 : 20);
        wake_.wait_for(lock, pause, woken);
      }
    }
    std::deque<std::function<void()>> batch;
    batch.swap(tasks_);
    lock.unlock();
    for (auto &task : batch)
      task();
    bool progressed = pollActive() || !batch.empty();
    pollDumpRequest();
    if (progressed)
      idle = 0;
    else if (++idle <= 64 || waiters_.load() > 0)
      std::this_thread::yield();
    lock.lock();
  }
}

bool MPICommunicator::pollActive() {
  bool any = false;
  llvm::erase_if(active_, [&](const std::shared_ptr<Pending> &pend) {
    int done = 0;
    check(MPI_Testall(int(pend->requests.size()), pend->requests.data(), &done,
                      MPI_STATUSES_IGNORE),
          "test");
    if (done) {
      completed(*pend);
      any = true;
    }
    return done != 0;
  });
  return any;
}

void MPICommunicator::pollDumpRequest() {
  if (dumpRequest_ == MPI_REQUEST_NULL)
    return;
  int flag = 0;
  MPI_Status status;
  check(MPI_Test(&dumpRequest_, &flag, &status), "test");
  if (!flag)
    return;
  // The failing peer's abort stops this rank next: the launcher's SIGTERM
  // is then its doing, not news this rank should print.
  noteStopUnderWay();
  dumpFlightRecord("rank " + std::to_string(dumpSignal_) +
                   " failed and asked every rank for its flight record");
  MPI_Request ack;
  check(MPI_Isend(&dumpAck_, 1, MPI_INT, status.MPI_SOURCE, kDumpAckTag,
                  dumpComm_, &ack),
        "send");
  MPI_Request_free(&ack);
}

/// How long a failing rank waits for its peers' flight records: at most
/// kRecordWait, and no longer than kRecordIdle after the last answer.
constexpr std::chrono::seconds kRecordWait{5}, kRecordIdle{2};

void MPICommunicator::askPeersToDump() {
  dumpAsk_ = rank_;
  // Left to the abort that follows: a late answer must still land in
  // memory that exists.
  auto &acks = *new std::vector<int>(size_t(size_), 0);
  auto &answers = *new std::vector<MPI_Request>;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_)
      continue;
    MPI_Request asked;
    MPI_Isend(&dumpAsk_, 1, MPI_INT, r, kDumpTag, dumpComm_, &asked);
    MPI_Request_free(&asked);
    MPI_Irecv(&acks[size_t(r)], 1, MPI_INT, r, kDumpAckTag, dumpComm_,
              &answers.emplace_back());
  }
  // A peer answers once its file is written (milliseconds); one that
  // cannot (stopped, lost, without a progress thread) never does. So the
  // wait ends when every peer answered, kRecordWait after the ask (time
  // for a live peer on a loaded machine), or kRecordIdle after the last
  // answer while others stay silent (the live ones have answered by then;
  // a lost rank does not hold the others for the whole wait).
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + kRecordWait;
  std::optional<Clock::time_point> lastAnswer;
  std::vector<int> indices(answers.size());
  for (int pending = int(answers.size()); pending > 0;) {
    Clock::time_point now = Clock::now();
    if (now >= deadline || (lastAnswer && now - *lastAnswer >= kRecordIdle))
      break;
    int completed = 0;
    MPI_Testsome(int(answers.size()), answers.data(), &completed,
                 indices.data(), MPI_STATUSES_IGNORE);
    if (completed > 0 && completed != MPI_UNDEFINED) {
      pending -= completed;
      lastAnswer = now;
    }
    // A peer failing at the same time asks this rank too: answered, so
    // that neither waits for the other.
    pollDumpRequest();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void MPICommunicator::failing(const std::string &reason) {
  dumpFlightRecord(reason);
  bool askPeers = flightRecorderOn() && size_ > 1;
  if (!running_ || onProgressThread()) {
    if (askPeers)
      askPeersToDump();
    return; // this thread may call MPI_Abort
  }
  // The MPI calls belong to the progress thread (MPI_THREAD_SERIALIZED): it
  // asks the peers and aborts the job. Should it be stuck in a blocking
  // call, this thread may not call MPI; an abnormal exit makes mpirun stop
  // the other ranks.
  submit([this, askPeers] {
    if (askPeers)
      askPeersToDump();
    MPI_Abort(MPI_COMM_WORLD, 1);
  });
  // Longer than the progress thread may wait for the peers' records.
  std::this_thread::sleep_for(kRecordWait + std::chrono::seconds(5));
  std::_Exit(1);
}

} // namespace

namespace {
/// MPI_Init once, at MPI_THREAD_SERIALIZED for the progress thread
/// (MPICommunicator::setProgressThread says why this level).
void initMPI() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    check(
        MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &threadLevel),
        "init");
  else
    MPI_Query_thread(&threadLevel);
}

/// NCCL's ranks under mpirun meet through MPI.
class MPIBootstrap : public Bootstrap {
public:
  MPIBootstrap() {
    initMPI();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_,
                        MPI_INFO_NULL, &node);
    MPI_Comm_rank(node, &localRank_);
    MPI_Comm_size(node, &localSize_);
    MPI_Comm_free(&node);
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int localRank() const override { return localRank_; }
  int localSize() const override { return localSize_; }
  void broadcast(void *data, size_t bytes) override {
    check(MPI_Bcast(data, int(bytes), MPI_BYTE, 0, MPI_COMM_WORLD),
          "broadcast");
  }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "barrier"); }
  void stopEveryRankOnError() override { setAbortHook(abortEveryRank); }
  void finish() override {} // MPI_Finalize waits for the others

private:
  int rank_ = 0, size_ = 1, localRank_ = 0, localSize_ = 1;
};
} // namespace

void Communicator::bootstrapMPI() {
  MPIBootstrap bootstrap;
  adopt(bootstrap);
}

std::unique_ptr<Bootstrap> titanrt::createMPIBootstrap() {
  return std::make_unique<MPIBootstrap>();
}

void titanrt::finalizeMPI() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized)
    MPI_Finalize();
}

std::unique_ptr<Communicator>
titanrt::createMPICommunicator(const std::vector<int64_t> &meshShape) {
  return std::make_unique<MPICommunicator>(meshShape);
}
