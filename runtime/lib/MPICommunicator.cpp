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
//===----------------------------------------------------------------------===//

#include "Communicator.h"
#include "Error.h"
#include "LowPrecision.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
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
MPI_Datatype mpiType(DataType type) {
  switch (type) {
  case DataType::F32:
    return MPI_FLOAT;
  case DataType::F64:
    return MPI_DOUBLE;
  case DataType::I32:
    return MPI_INT32_T;
  case DataType::BF16:
  case DataType::F16:
    return MPI_UINT16_T;
  case DataType::F8E4M3FN:
  case DataType::F8E5M2:
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
MPI_Op mpiOp(DataType type, bool max) {
  if (type != DataType::BF16 && type != DataType::F16) {
    if (type == DataType::F8E4M3FN || type == DataType::F8E5M2)
      fatal(std::string("the MPI communicator cannot reduce ") +
            dataTypeName(type) +
            " buffers (8-bit floats are gathered, not summed)");
    return max ? MPI_MAX : MPI_SUM;
  }
  static MPI_Op ops[2][2] = {{MPI_OP_NULL, MPI_OP_NULL},
                             {MPI_OP_NULL, MPI_OP_NULL}};
  MPI_Op &op = ops[type == DataType::F16][max];
  if (op == MPI_OP_NULL) {
    MPI_User_function *fn =
        type == DataType::BF16
            ? (max ? combine16<bf16ToFloat, floatToBf16, true>
                   : combine16<bf16ToFloat, floatToBf16, false>)
            : (max ? combine16<f16ToFloat, floatToF16, true>
                   : combine16<f16ToFloat, floatToF16, false>);
    check(MPI_Op_create(fn, /*commute=*/1, &op), "op create");
  }
  return op;
}

/// Divides `count` elements of `type` by `n` in place (rounded to the type).
void divideInPlace(void *data, DataType type, int64_t count, double n) {
  switch (type) {
  case DataType::F64:
    for (int64_t i = 0; i < count; ++i)
      static_cast<double *>(data)[i] /= n;
    return;
  case DataType::F32:
    for (int64_t i = 0; i < count; ++i)
      static_cast<float *>(data)[i] = float(static_cast<float *>(data)[i] / n);
    return;
  case DataType::BF16:
  case DataType::F16: {
    bool bf16 = type == DataType::BF16;
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
          dataTypeName(type) + " buffers");
  }
}

/// Point-to-point tags, distinct so that a shift and a chunked all-to-all
/// on one communicator never match each other's messages.
constexpr int kSendRecvTag = 0;
constexpr int kAllToAllTag = 1;

/// Every rank stops: a rank that failed must not leave the others waiting
/// in a collective forever.
void abortEveryRank(const std::string &) { MPI_Abort(MPI_COMM_WORLD, 1); }

/// A pending MPI request and what to do once it completes.
struct MPIRequest : Request {
  MPIRequest(const Communicator &comm, const char *collective,
             unsigned axisMask)
      : comm(comm), collective(collective), axisMask(axisMask) {}
  const Communicator &comm;
  const char *collective;
  unsigned axisMask;
  /// The MPI requests of the operation's messages (one in the common case).
  std::vector<MPI_Request> requests;
  MPI_Request *add() { return &requests.emplace_back(MPI_REQUEST_NULL); }
  std::vector<char> staging;
  std::function<void()> then;
  /// `bytes` of scratch: the planned `staging` when given, else owned.
  char *scratch(int64_t bytes, void *planned) {
    if (planned)
      return static_cast<char *>(planned);
    staging.resize(size_t(bytes));
    return staging.data();
  }
  /// Waits, polling, up to the communicator's timeout; past it every rank
  /// is aborted with a message naming the collective (a stopped or lost
  /// peer must not hang the job).
  void finish() override {
    auto start = std::chrono::steady_clock::now();
    for (int done = 0;;) {
      check(MPI_Testall(int(requests.size()), requests.data(), &done,
                        MPI_STATUSES_IGNORE),
            "wait");
      if (done)
        break;
      double waited = std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start)
                          .count();
      if (waited > comm.timeoutSeconds())
        fatal(Communicator::timeoutMessage(collective, axisMask, comm.context(),
                                           comm.timeoutSeconds()));
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    if (then)
      then();
  }
  bool test() override {
    int done = 0;
    check(MPI_Testall(int(requests.size()), requests.data(), &done,
                      MPI_STATUSES_IGNORE),
          "test");
    if (done && then)
      then();
    return done;
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
  }

  ~MPICommunicator() override {
    for (auto &[mask, comm] : groups_)
      MPI_Comm_free(&comm);
  }

  std::unique_ptr<Request> allGather(const void *in, void *out, DataType type,
                                     int64_t outer, int64_t dimSize,
                                     int64_t inner, int64_t gatheredSize,
                                     unsigned axisMask,
                                     void *staging) override {
    auto req = std::make_unique<MPIRequest>(*this, "all_gather", axisMask);
    int64_t parts = groupSize(axisMask);
    int64_t count = outer * dimSize * inner;
    void *dst = out;
    if (outer > 1 || gatheredSize != parts * dimSize) {
      char *gathered =
          req->scratch(parts * count * dataTypeBytes(type), staging);
      dst = gathered;
      char *final = static_cast<char *>(out);
      int64_t rowBytes = inner * dataTypeBytes(type);
      req->then = [gathered, final, outer, parts, dimSize, gatheredSize,
                   rowBytes] {
        rearrange(gathered, final, outer, parts, dimSize, gatheredSize,
                  rowBytes, /*toRankMajor=*/false);
      };
    }
    MPI_Comm comm = group(axisMask);
    if (count <= maxMessageCount()) {
      check(MPI_Iallgather(in, int(count), mpiType(type), dst, int(count),
                           mpiType(type), comm, req->add()),
            "all_gather");
      return req;
    }
    // Too large for one message: each rank broadcasts its block in pieces.
    int me = 0;
    MPI_Comm_rank(comm, &me);
    int64_t bytes = dataTypeBytes(type);
    char *blocks = static_cast<char *>(dst);
    std::memmove(blocks + me * count * bytes, in, count * bytes);
    forEachPiece(count, [&](int64_t offset, int length) {
      for (int64_t p = 0; p < parts; ++p)
        check(MPI_Ibcast(blocks + (p * count + offset) * bytes, length,
                         mpiType(type), int(p), comm, req->add()),
              "all_gather");
    });
    return req;
  }

  std::unique_ptr<Request> reduceScatter(const void *in, void *out,
                                         DataType type, int64_t outer,
                                         int64_t dimSize, int64_t inner,
                                         unsigned axisMask,
                                         void *staging) override {
    auto req = std::make_unique<MPIRequest>(*this, "reduce_scatter", axisMask);
    int64_t parts = groupSize(axisMask);
    int64_t rows = (dimSize + parts - 1) / parts;
    int64_t count = outer * rows * inner;
    const void *src = in;
    if (outer > 1 || rows * parts != dimSize) {
      char *packed = req->scratch(parts * count * dataTypeBytes(type), staging);
      rearrange(static_cast<const char *>(in), packed, outer, parts, rows,
                dimSize, inner * dataTypeBytes(type), /*toRankMajor=*/true);
      src = packed;
    }
    MPI_Comm comm = group(axisMask);
    MPI_Op op = mpiOp(type, /*max=*/false);
    if (count <= maxMessageCount()) {
      check(MPI_Ireduce_scatter_block(src, out, int(count), mpiType(type), op,
                                      comm, req->add()),
            "reduce_scatter");
      return req;
    }
    // Too large for one message: block p is reduced onto rank p in pieces.
    int me = 0;
    MPI_Comm_rank(comm, &me);
    int64_t bytes = dataTypeBytes(type);
    const char *blocks = static_cast<const char *>(src);
    char *mine = static_cast<char *>(out);
    forEachPiece(count, [&](int64_t offset, int length) {
      for (int64_t p = 0; p < parts; ++p)
        check(MPI_Ireduce(blocks + (p * count + offset) * bytes,
                          p == me ? mine + offset * bytes : nullptr, length,
                          mpiType(type), op, int(p), comm, req->add()),
              "reduce_scatter");
    });
    return req;
  }

  std::unique_ptr<Request> allReduce(const void *in, void *out, DataType type,
                                     int64_t count, Reduction reduction,
                                     unsigned axisMask) override {
    auto req = std::make_unique<MPIRequest>(*this, "all_reduce", axisMask);
    MPI_Op op = mpiOp(type, reduction == Reduction::Max);
    int64_t bytes = dataTypeBytes(type);
    forEachPiece(count, [&](int64_t offset, int length) {
      check(MPI_Iallreduce(static_cast<const char *>(in) + offset * bytes,
                           static_cast<char *>(out) + offset * bytes, length,
                           mpiType(type), op, group(axisMask), req->add()),
            "all_reduce");
    });
    if (reduction == Reduction::Average) {
      double n = double(groupSize(axisMask));
      req->then = [out, count, type, n] { divideInPlace(out, type, count, n); };
    }
    return req;
  }

  std::unique_ptr<Request> allToAll(const void *in, void *out, DataType type,
                                    int64_t splitOuter, int64_t splitDim,
                                    int64_t splitInner, int64_t concatOuter,
                                    int64_t concatDim, int64_t concatInner,
                                    unsigned axisMask, void *staging) override {
    auto req = std::make_unique<MPIRequest>(*this, "all_to_all", axisMask);
    int64_t parts = groupSize(axisMask);
    // Pack part p (a slice of the split dimension) contiguously, rank-major.
    int64_t total = splitOuter * splitDim * splitInner * dataTypeBytes(type);
    char *send = req->scratch(2 * total, staging);
    rearrange(static_cast<const char *>(in), send, splitOuter, parts,
              splitDim / parts, splitDim, splitInner * dataTypeBytes(type),
              /*toRankMajor=*/true);
    char *recv = send + total;
    int64_t count = total / dataTypeBytes(type) / parts;
    char *final = static_cast<char *>(out);
    int64_t rowBytes = concatInner * dataTypeBytes(type);
    // Part q from rank q lands at offset q of the concat dimension.
    req->then = [recv, final, concatOuter, parts, concatDim, rowBytes] {
      rearrange(recv, final, concatOuter, parts, concatDim, parts * concatDim,
                rowBytes, /*toRankMajor=*/false);
    };
    MPI_Comm comm = group(axisMask);
    if (count <= maxMessageCount()) {
      check(MPI_Ialltoall(send, int(count), mpiType(type), recv, int(count),
                          mpiType(type), comm, req->add()),
            "all_to_all");
      return req;
    }
    // Too large for one message: a send/receive pair per peer and piece.
    int64_t bytes = dataTypeBytes(type);
    forEachPiece(count, [&](int64_t offset, int length) {
      for (int64_t q = 0; q < parts; ++q) {
        int64_t at = (q * count + offset) * bytes;
        check(MPI_Irecv(recv + at, length, mpiType(type), int(q), kAllToAllTag,
                        comm, req->add()),
              "all_to_all");
        check(MPI_Isend(send + at, length, mpiType(type), int(q), kAllToAllTag,
                        comm, req->add()),
              "all_to_all");
      }
    });
    return req;
  }

  std::unique_ptr<Request> broadcast(const void *in, void *out, DataType type,
                                     int64_t count, int64_t root,
                                     unsigned axisMask) override {
    auto req = std::make_unique<MPIRequest>(*this, "broadcast", axisMask);
    if (in != out)
      std::memcpy(out, in, count * dataTypeBytes(type));
    int64_t bytes = dataTypeBytes(type);
    forEachPiece(count, [&](int64_t offset, int length) {
      check(MPI_Ibcast(static_cast<char *>(out) + offset * bytes, length,
                       mpiType(type), int(root), group(axisMask), req->add()),
            "broadcast");
    });
    return req;
  }

  std::unique_ptr<Request> sendRecv(const void *in, void *out, DataType type,
                                    int64_t count, int64_t shift,
                                    unsigned axisMask) override {
    auto req = std::make_unique<MPIRequest>(*this, "send_recv", axisMask);
    MPI_Comm comm = group(axisMask);
    int size = 0, me = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &me);
    int to = int(((me + shift) % size + size) % size);
    int from = int(((me - shift) % size + size) % size);
    int64_t bytes = dataTypeBytes(type);
    forEachPiece(count, [&](int64_t offset, int length) {
      check(MPI_Irecv(static_cast<char *>(out) + offset * bytes, length,
                      mpiType(type), from, kSendRecvTag, comm, req->add()),
            "recv");
      check(MPI_Isend(static_cast<const char *>(in) + offset * bytes, length,
                      mpiType(type), to, kSendRecvTag, comm, req->add()),
            "send");
    });
    return req;
  }

  std::unique_ptr<Request> send(const void *in, DataType type, int64_t count,
                                int64_t peer, int tag) override {
    auto req = std::make_unique<MPIRequest>(*this, "send", 1u << kPP);
    int64_t bytes = dataTypeBytes(type);
    // The pp group is ordered by world rank, i.e. by pipeline coordinate.
    MPI_Comm comm = group(1u << kPP);
    forEachPiece(count, [&](int64_t offset, int length) {
      check(MPI_Isend(static_cast<const char *>(in) + offset * bytes, length,
                      mpiType(type), int(peer), tag, comm, req->add()),
            "send");
    });
    return req;
  }

  std::unique_ptr<Request> recv(void *out, DataType type, int64_t count,
                                int64_t peer, int tag) override {
    auto req = std::make_unique<MPIRequest>(*this, "recv", 1u << kPP);
    int64_t bytes = dataTypeBytes(type);
    MPI_Comm comm = group(1u << kPP);
    forEachPiece(count, [&](int64_t offset, int length) {
      check(MPI_Irecv(static_cast<char *>(out) + offset * bytes, length,
                      mpiType(type), int(peer), tag, comm, req->add()),
            "recv");
    });
    return req;
  }

  int maxPeerTag() const override {
    void *value = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &value, &found);
    // MPI guarantees at least 32767.
    return found ? *static_cast<int *>(value) : 32767;
  }

  void prepareGroups(const std::vector<unsigned> &axisMasks) override {
    for (unsigned mask : axisMasks)
      group(mask);
  }

  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "barrier"); }

private:
  /// The communicator of the ranks that share this rank's coordinates on
  /// every axis outside `axisMask`, ordered by rank.
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
};

} // namespace

void Communicator::bootstrapMPI() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    check(MPI_Init(nullptr, nullptr), "init");
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  if (size_ > 1)
    setAbortHook(abortEveryRank);
  checkWorldSize(mesh_, size_);
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
