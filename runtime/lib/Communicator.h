//===- Communicator.h - collectives over a device mesh ----------*- C++ -*-===//

#ifndef TITANRT_LIB_COMMUNICATOR_H
#define TITANRT_LIB_COMMUNICATOR_H

#include "titan/Contract/Dtype.h"
#include "titan/Contract/Manifest.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

/// A CUDA stream (cudaStream_t), named without CUDA's headers.
struct CUstream_st;

namespace titanrt {

class Bootstrap;

/// Mesh axes in rank-layout order (tp varies fastest), as #dist.mesh (the
/// manifest names them).
using titan::manifest::kCP;
using titan::manifest::kDPReplicate;
using titan::manifest::kDPShard;
using titan::manifest::kNumAxes;
using titan::manifest::kPP;
using titan::manifest::kTP;
using titan::manifest::MeshAxis;

/// How all-reduce combines the ranks' values.
enum class Reduction { Sum, Average, Max };

/// The element type of a collective's buffers. Collectives that only move
/// data take any of them; sums and maxima of the 16-bit formats are
/// computed in float and rounded to nearest even.
using titan::Dtype;

/// The two flows of a pipeline's messages between neighbouring pipeline
/// ranks: activations toward later stages, their gradients toward earlier
/// ones.
enum class PeerFlow { Activations, Gradients };

/// An in-flight collective; finish() completes it.
struct Request {
  virtual ~Request() = default;
  virtual void finish() = 0;
  /// Whether it has completed (then finished), without waiting where the
  /// backend can tell.
  virtual bool test() {
    finish();
    return true;
  }
};

/// The process group of a run: one rank of a mesh, with a communicator per
/// subset of axes created on first use. Backed by MPI on CPUs (host
/// buffers) and by NCCL on GPUs (device buffers, bootstrapped over MPI).
///
/// The buffer contract: the collectives (allGather ... sendRecv, send,
/// recv) take buffers in the memory of the device the step runs on, the
/// arena's (host memory on CPUs, device memory on GPUs, where NCCL refuses
/// host pointers); they may still be in flight when they return. Values the
/// host itself agrees on between steps (a resume step, a loss) go through
/// hostAllReduce and hostBroadcast, which take host memory on every backend
/// and return with the result in it.
class Communicator {
public:
  virtual ~Communicator();
  int rank() const { return rank_; }
  int worldSize() const { return size_; }
  const std::vector<int64_t> &meshShape() const { return mesh_; }
  /// This rank's coordinate along `axis`.
  int64_t coordinate(MeshAxis axis) const;

  /// The collectives of the dist dialect over the ranks that differ only in
  /// the axes of `axisMask` (bit i = MeshAxis i), on elements of `type`;
  /// `outer`/`inner` are the element counts before and after the
  /// gathered/scattered dimension.
  ///
  /// allGather: `dimSize` is each rank's size of the dimension; the result
  /// keeps the first `gatheredSize` (<= ranks x dimSize) of the concatenation,
  /// dropping uneven shards' padding.
  ///
  /// `staging` (allGather, reduceScatter, allToAll) is scratch memory the
  /// collective may use until it finishes, as large as the kernel contract
  /// of its dist op says (lib/Target/CommonWorkspaces.cpp: a gather
  /// or scatter along an inner dimension or of padded shards needs the
  /// group's rank-major copy, an all-to-all twice the input); null: the
  /// communicator allocates it.
  virtual std::unique_ptr<Request>
  allGather(const void *in, void *out, Dtype type, int64_t outer,
            int64_t dimSize, int64_t inner, int64_t gatheredSize,
            unsigned axisMask, void *staging = nullptr) = 0;
  /// reduceScatter: `dimSize` is the input's size of the dimension, padded
  /// with zeros to ranks x ceil(dimSize / ranks) before the split.
  virtual std::unique_ptr<Request> reduceScatter(const void *in, void *out,
                                                 Dtype type, int64_t outer,
                                                 int64_t dimSize, int64_t inner,
                                                 unsigned axisMask,
                                                 void *staging = nullptr) = 0;
  virtual std::unique_ptr<Request> allReduce(const void *in, void *out,
                                             Dtype type, int64_t count,
                                             Reduction reduction,
                                             unsigned axisMask) = 0;
  /// Splits `in` along its middle dimension into one part per rank and
  /// sends part p to rank p; the parts received are concatenated along the
  /// middle dimension of `out` in rank order. `in` is
  /// [outer][dimSize][inner]; `out` is [outerOut][dimSizeOut][innerOut]
  /// after the caller's choice of split and concat dimensions (see
  /// CollectiveABI.cpp).
  virtual std::unique_ptr<Request>
  allToAll(const void *in, void *out, Dtype type, int64_t splitOuter,
           int64_t splitDim, int64_t splitInner, int64_t concatOuter,
           int64_t concatDim, int64_t concatInner, unsigned axisMask,
           void *staging = nullptr) = 0;
  /// Every rank receives the `count` elements of the group's rank `root`.
  virtual std::unique_ptr<Request> broadcast(const void *in, void *out,
                                             Dtype type, int64_t count,
                                             int64_t root,
                                             unsigned axisMask) = 0;
  /// Sends `in` to the rank `shift` steps further along the single axis of
  /// `axisMask` (wrapping) and receives the one from `shift` steps back.
  virtual std::unique_ptr<Request> sendRecv(const void *in, void *out,
                                            Dtype type, int64_t count,
                                            int64_t shift,
                                            unsigned axisMask) = 0;
  /// Pipeline parallelism's point-to-point transfers: to (from) the rank at
  /// pipeline coordinate `peer` that shares this rank's other coordinates.
  /// Each (peer, flow) is a channel whose messages arrive in the order they
  /// were sent; `tag` (0 <= tag <= maxPeerTag()) names a message within a
  /// step, for backends that match by tag (MPI); backends that match in
  /// order (NCCL) ignore it, which is sound because dist-pipeline-schedule
  /// checks that every rank receives each channel's messages in the order
  /// its peer sends them (verifyLoweredSchedule).
  ///
  /// send reads `in` as the work issued before it leaves it, until the
  /// request completes (the pipeline executor sends from planned buffers,
  /// not from its frames); recv writes `out` once finish() has returned
  /// (on a device: for the work issued after finish()).
  virtual std::unique_ptr<Request> send(const void *in, Dtype type,
                                        int64_t count, int64_t peer,
                                        PeerFlow flow, int tag) = 0;
  virtual std::unique_ptr<Request> recv(void *out, Dtype type, int64_t count,
                                        int64_t peer, PeerFlow flow,
                                        int tag) = 0;
  /// The largest tag send and recv take.
  virtual int maxPeerTag() const = 0;
  /// Creates the pipeline's channels now, at start (collective over the
  /// ranks of each pipeline group): a step never creates one. Backends
  /// whose channels need no set-up have nothing to do.
  virtual void preparePeers() {}
  virtual void barrier() = 0;

  /// Blocking collectives on host memory: every rank of the group of
  /// `axisMask` calls them, and each returns with `values` (host memory)
  /// holding the reduction, or root's values, readable at once.
  void hostAllReduce(double *values, int64_t count, Reduction reduction,
                     unsigned axisMask);
  void hostBroadcast(double *values, int64_t count, int64_t root,
                     unsigned axisMask);

  /// Watches the device work enqueued so far on `stream` (a CUDA graph's
  /// replay, whose collectives were captured unwatched) as a collective is
  /// watched: past the timeout every rank stops, naming `what`. Backends
  /// whose collectives complete on the host have nothing to watch.
  virtual void watchStream(const std::string &what, CUstream_st *stream) {
    (void)what;
    (void)stream;
  }

  /// Stops the run, naming them, when collectives issued while capturing
  /// `graph` (a CUDA graph) were never joined back into the compute
  /// stream: the capture could not end (CaptureJoins.h). Backends that
  /// never capture have nothing to check.
  virtual void checkCaptureJoined(const std::string &graph) { (void)graph; }

  /// Creates the communicators of these mesh-axis groups (axis masks) now,
  /// at start: a step (or a CUDA graph capture) never creates one.
  virtual void prepareGroups(const std::vector<unsigned> &axisMasks) {
    (void)axisMasks;
  }

  /// Whether communication progresses while the caller computes: the MPI
  /// backend's progress thread (on unless debug.no_comm_overlap); off, a
  /// collective progresses only inside finish() and test(). Backends whose
  /// collectives run on a device have nothing to turn on.
  virtual void setProgressThread(bool on) { (void)on; }
  virtual bool progressThread() const { return false; }

  /// TorchTitan's flight recorder ([comm] trace_buf_size,
  /// save_traces_folder, save_traces_file_prefix): the last `capacity`
  /// collectives of this rank, written as JSON to `path` when a fatal error
  /// stops the run (a timeout, a lost peer, any other); 0 turns it off.
  void setFlightRecorder(int64_t capacity, std::string path);
  /// Writes the flight record (once per run) with `reason`; false when the
  /// recorder is off, has no entry or was already dumped. A failure to write is
  /// reported on stderr, not fatal: this runs while the job is being stopped.
  bool dumpFlightRecord(const std::string &reason);
  /// The communicator that fatal() stops the job through, if any.
  static Communicator *live() { return live_; }
  /// Called once by the abort hook when a fatal error stops the run, before
  /// every rank is aborted: dumps the flight record (the MPI backend also
  /// asks its peers to dump theirs).
  virtual void failing(const std::string &reason) { dumpFlightRecord(reason); }

  /// A collective that does not finish within `seconds` stops the job on
  /// every rank, naming itself, its mesh axes and the context.
  void setTimeout(double seconds) { timeoutSeconds_ = seconds; }
  double timeoutSeconds() const { return timeoutSeconds_; }
  /// What the run is doing ("step 3"), for those messages.
  void setContext(std::string context) { context_ = std::move(context); }
  const std::string &context() const { return context_; }
  /// "all_gather over [dp_shard, tp]".
  static std::string describe(const char *collective, unsigned axisMask);
  /// What a collective that outlived its [comm] timeout reports, on every
  /// backend.
  static std::string timeoutMessage(const char *collective, unsigned axisMask,
                                    const std::string &context, double seconds);
  /// The same for any watched work, `what` describing it.
  static std::string timeoutMessage(const std::string &what,
                                    const std::string &context, double seconds);

  /// The world rank at pipeline coordinate `ppCoordinate` that shares this
  /// rank's other coordinates (pp is the outermost mesh axis).
  int64_t peerWorldRank(int64_t ppCoordinate) const;
  /// Size of the group of `axisMask`.
  int64_t groupSize(unsigned axisMask) const;
  /// This rank's index in the group of ranks that differ only in `axes`,
  /// numbered with `axes[0]` outermost (the order a sharding lists them).
  int64_t groupIndex(const std::vector<MeshAxis> &axes) const;
  /// Equal for exactly the ranks that share this rank's coordinates on
  /// every axis outside `axisMask` (the ranks of one group).
  int64_t groupColor(unsigned axisMask) const;

protected:
  /// Flight-recorder entries: a collective issued (returns its entry, -1
  /// when the recorder is off) and completed (`completed` on
  /// StepTrace::now()'s clock). Thread-safe. `peer`: the world rank of a
  /// point-to-point transfer's other side, else -1.
  int64_t recordIssued(const char *collective, unsigned axisMask, Dtype type,
                       int64_t count, double issued, int64_t peer = -1);
  void recordCompleted(int64_t entry, double completed);
  bool flightRecorderOn() const;

  /// Runs `collective(in, out)` with `bytes` of the host memory `values` as
  /// its input and result, in buffers of the collectives' memory space, and
  /// returns once `values` holds the result. This default is for backends
  /// on host memory.
  virtual void runOnHost(
      void *values, int64_t bytes,
      llvm::function_ref<std::unique_ptr<Request>(const void *in, void *out)>
          collective);

  /// MPI_Init (once) and this process's world rank and size; stops the run
  /// when the size is not the product of the mesh.
  void bootstrapMPI();
  /// The same from the launcher's bootstrap (NCCL's ranks): the world rank
  /// and size, and a fatal error on one rank stops them all.
  void adopt(Bootstrap &bootstrap);

  std::vector<int64_t> mesh_;
  int rank_ = 0, size_ = 1; ///< in the world, set by bootstrapMPI or adopt
  double timeoutSeconds_ = 300;
  std::string context_ = "start-up";

private:
  struct FlightRecorder;
  std::shared_ptr<FlightRecorder> recorder_; // shared: an incomplete type here
  static Communicator *live_;                ///< set by bootstrapMPI or adopt
};

enum class Backend { MPI, NCCL };

/// Initializes the process group for a mesh (MPI_Init on first call); the
/// world size must equal the mesh's product, or the run stops with a message
/// naming both. NCCL needs a build with CUDA (TITAN_HAVE_NCCL). Start-up
/// (NCCL's communicator creation, which waits for every peer) and then
/// every collective get `timeoutSeconds` (TorchTitan's
/// comm.init_timeout_seconds) until setTimeout says otherwise.
Communicator &initCommunicator(const std::vector<int64_t> &meshShape,
                               Backend backend = Backend::MPI,
                               double timeoutSeconds = 300);
/// The communicator set up by initCommunicator.
Communicator &communicator();
/// That communicator, or null before initCommunicator (a single-rank run).
Communicator *activeCommunicator();

/// dist.shard_offset's value on this rank: its index over some mesh axes
/// times a stride; `ints` = {stride, number of axes, axis indices (0 pp ...
/// 4 tp) outermost first}, as KernelABI.h passes them.
int32_t shardOffset(const int64_t *ints);
/// This rank's index in the group over `axisList` = {number of axes, axis
/// indices...}, and the group's size.
struct GroupPlace {
  int64_t index, size;
};
GroupPlace groupPlace(const int64_t *axisList);
/// Releases the communicator and finalizes MPI.
void shutdownCommunicator();

// Backends and their shared pieces: MPICommunicator.cpp and
// CommunicatorBackends.cpp in libtitanrt_comm (MPI), NCCLCommunicator.cpp in
// libtitanrt_nccl (CUDA builds; no MPI), which initCommunicator loads as the
// launch needs them; checkWorldSize is in Communicator.cpp.
std::unique_ptr<Communicator>
createMPICommunicator(const std::vector<int64_t> &meshShape);
/// MPI's bootstrap for NCCL's ranks under mpirun.
std::unique_ptr<Bootstrap> createMPIBootstrap();
std::unique_ptr<Communicator>
createNCCLCommunicator(const std::vector<int64_t> &meshShape,
                       double startupTimeoutSeconds, Bootstrap &bootstrap);
void finalizeMPI();
/// Stops the run with a message naming the mesh and the launch size.
void checkWorldSize(const std::vector<int64_t> &mesh, int64_t size);

} // namespace titanrt

#endif // TITANRT_LIB_COMMUNICATOR_H
