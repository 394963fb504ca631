//===- MPICommunicator.cpp - collectives over MPI -------------------------===//
//
// Nonblocking MPI collectives (MPI-3) on sub-communicators split from
// MPI_COMM_WORLD per subset of mesh axes. Gathers and scatters along a
// dimension other than the outermost go through a staging buffer in
// rank-major block order, rearranged when the request finishes.
//
//===----------------------------------------------------------------------===//

#include "Communicator.h"
#include "Error.h"

#include <mpi.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <string>

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

MPI_Datatype mpiType(int elementSize) {
  return elementSize == 8 ? MPI_DOUBLE : MPI_FLOAT;
}

/// A pending MPI request and what to do once it completes.
struct MPIRequest : Request {
  /// One MPI request per operation (two for a send/recv pair).
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  std::vector<char> staging;
  std::function<void()> then;
  void finish() override {
    check(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE), "wait");
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
  }

  ~MPICommunicator() override {
    for (auto &[mask, comm] : groups_)
      MPI_Comm_free(&comm);
  }

  std::unique_ptr<Request> allGather(const void *in, void *out, int elementSize,
                                     int64_t outer, int64_t dimSize,
                                     int64_t inner, int64_t gatheredSize,
                                     unsigned axisMask) override {
    auto req = std::make_unique<MPIRequest>();
    int64_t parts = groupSize(axisMask);
    int64_t count = outer * dimSize * inner;
    void *dst = out;
    if (outer > 1 || gatheredSize != parts * dimSize) {
      req->staging.resize(parts * count * elementSize);
      dst = req->staging.data();
      char *final = static_cast<char *>(out);
      MPIRequest *r = req.get();
      int64_t rowBytes = inner * elementSize;
      req->then = [r, final, outer, parts, dimSize, gatheredSize, rowBytes] {
        rearrange(r->staging.data(), final, outer, parts, dimSize, gatheredSize,
                  rowBytes, /*toRankMajor=*/false);
      };
    }
    check(MPI_Iallgather(in, count, mpiType(elementSize), dst, count,
                         mpiType(elementSize), group(axisMask),
                         &req->requests[0]),
          "all_gather");
    return req;
  }

  std::unique_ptr<Request> reduceScatter(const void *in, void *out,
                                         int elementSize, int64_t outer,
                                         int64_t dimSize, int64_t inner,
                                         unsigned axisMask) override {
    auto req = std::make_unique<MPIRequest>();
    int64_t parts = groupSize(axisMask);
    int64_t rows = (dimSize + parts - 1) / parts;
    int64_t count = outer * rows * inner;
    const void *src = in;
    if (outer > 1 || rows * parts != dimSize) {
      req->staging.resize(parts * count * elementSize);
      rearrange(static_cast<const char *>(in), req->staging.data(), outer,
                parts, rows, dimSize, inner * elementSize,
                /*toRankMajor=*/true);
      src = req->staging.data();
    }
    check(MPI_Ireduce_scatter_block(src, out, count, mpiType(elementSize),
                                    MPI_SUM, group(axisMask),
                                    &req->requests[0]),
          "reduce_scatter");
    return req;
  }

  std::unique_ptr<Request> allReduce(const void *in, void *out, int elementSize,
                                     int64_t count, Reduction reduction,
                                     unsigned axisMask) override {
    auto req = std::make_unique<MPIRequest>();
    check(MPI_Iallreduce(in, out, count, mpiType(elementSize),
                         reduction == Reduction::Max ? MPI_MAX : MPI_SUM,
                         group(axisMask), &req->requests[0]),
          "all_reduce");
    if (reduction == Reduction::Average) {
      double n = double(groupSize(axisMask));
      req->then = [out, count, elementSize, n] {
        if (elementSize == 8)
          for (int64_t i = 0; i < count; ++i)
            static_cast<double *>(out)[i] /= n;
        else
          for (int64_t i = 0; i < count; ++i)
            static_cast<float *>(out)[i] =
                float(static_cast<float *>(out)[i] / n);
      };
    }
    return req;
  }

  std::unique_ptr<Request> allToAll(const void *in, void *out, int elementSize,
                                    int64_t splitOuter, int64_t splitDim,
                                    int64_t splitInner, int64_t concatOuter,
                                    int64_t concatDim, int64_t concatInner,
                                    unsigned axisMask) override {
    auto req = std::make_unique<MPIRequest>();
    int64_t parts = groupSize(axisMask);
    // Pack part p (a slice of the split dimension) contiguously, rank-major.
    int64_t total = splitOuter * splitDim * splitInner * elementSize;
    req->staging.resize(2 * total);
    rearrange(static_cast<const char *>(in), req->staging.data(), splitOuter,
              parts, splitDim / parts, splitDim, splitInner * elementSize,
              /*toRankMajor=*/true);
    char *recv = req->staging.data() + total;
    int64_t count = total / elementSize / parts;
    char *final = static_cast<char *>(out);
    int64_t rowBytes = concatInner * elementSize;
    // Part q from rank q lands at offset q of the concat dimension.
    req->then = [recv, final, concatOuter, parts, concatDim, rowBytes] {
      rearrange(recv, final, concatOuter, parts, concatDim, parts * concatDim,
                rowBytes, /*toRankMajor=*/false);
    };
    check(MPI_Ialltoall(req->staging.data(), count, mpiType(elementSize), recv,
                        count, mpiType(elementSize), group(axisMask),
                        &req->requests[0]),
          "all_to_all");
    return req;
  }

  std::unique_ptr<Request> broadcast(const void *in, void *out, int elementSize,
                                     int64_t count, int64_t root,
                                     unsigned axisMask) override {
    auto req = std::make_unique<MPIRequest>();
    if (in != out)
      std::memcpy(out, in, count * elementSize);
    check(MPI_Ibcast(out, count, mpiType(elementSize), int(root),
                     group(axisMask), &req->requests[0]),
          "broadcast");
    return req;
  }

  std::unique_ptr<Request> sendRecv(const void *in, void *out, int elementSize,
                                    int64_t count, int64_t shift,
                                    unsigned axisMask) override {
    auto req = std::make_unique<MPIRequest>();
    MPI_Comm comm = group(axisMask);
    int size = 0, me = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &me);
    int to = int(((me + shift) % size + size) % size);
    int from = int(((me - shift) % size + size) % size);
    check(MPI_Irecv(out, count, mpiType(elementSize), from, 0, comm,
                    &req->requests[0]),
          "recv");
    check(MPI_Isend(in, count, mpiType(elementSize), to, 0, comm,
                    &req->requests[1]),
          "send");
    return req;
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
