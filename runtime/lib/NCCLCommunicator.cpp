//===- NCCLCommunicator.cpp - collectives over NCCL on GPUs ---------------===//
//
// The GPU backend of Communicator: buffers are device pointers, collectives
// run on one communication stream per mesh-axis group (created at start
// with the group's communicator), and a request's finish() makes the
// compute stream wait for it on the device (no host synchronization), so
// compute scheduled between start and wait overlaps the transfer.
// Bootstrapped through the launcher's Bootstrap (Bootstrap.h: MPI under
// mpirun, the TCP store under torchrun and srun): rank 0's ncclUniqueId is
// broadcast through it, and the communicator of each set of mesh axes is
// split from the world one. This file links no MPI.
// Gathers and scatters along a middle dimension go through a device staging
// buffer in rank-major block order, rearranged with strided 2-D copies.
//
// The waits are device-side, so a stalled peer would hang the host in its
// next synchronization. A watchdog thread (as PyTorch's ProcessGroupNCCL
// has) therefore polls an event recorded after each collective and the
// communicators' asynchronous errors; a collective past its [comm] timeout,
// or an NCCL error, aborts the communicators (ncclCommAbort, which stops
// their kernels) and then every rank. Collectives issued while the compute
// stream is captured into a CUDA graph get no watchdog event (querying an
// event recorded under capture fails with cudaErrorCapturedEvent); the
// device instead has each replay of the graph watched (watchStream).
// The events that order the streams come from a per-communicator pool.
// Communicator creation (ncclCommInitRank, ncclCommSplit) waits for every
// peer on the host, so it runs on a helper thread under the same deadline.
// Teardown cannot block either: the watchdog's ncclCommAbort and the
// destructor's ncclCommDestroy run under a deadline, past which the rank
// ends (Deadline.h), and the device destroys its CUDA graphs, which keep
// the communicators referenced, before the communicator goes
// (RankShutdown.h). Collectives of the several group communicators are
// ordered as NCCLLaunchOrder.h says.
//
//===----------------------------------------------------------------------===//

#include "Bootstrap.h"
#include "CaptureJoins.h"
#include "Communicator.h"
#include "Deadline.h"
#include "Error.h"
#include "NCCLLaunchOrder.h"
#include "PeerChannels.h"
#include "Trace.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

using namespace titanrt;

namespace {

/// How long the watchdog's ncclCommAbort and the destructor's
/// ncclCommDestroy may take before the rank ends without them: both
/// return in milliseconds unless something holds the communicator.
constexpr double kTeardownSeconds = 20;

void checkCuda(cudaError_t rc, const char *what) {
  if (rc != cudaSuccess)
    fatal(std::string("CUDA ") + what + " failed: " + cudaGetErrorString(rc));
}

void checkNccl(ncclResult_t rc, const char *what) {
  if (rc != ncclSuccess)
    fatal(std::string("NCCL ") + what + " failed: " + ncclGetErrorString(rc) +
          (rc == ncclRemoteError || rc == ncclSystemError
               ? " (a peer may have exited; see its output)"
               : ""));
}

ncclDataType_t ncclType(Dtype type) {
  switch (type) {
  case Dtype::f32:
    return ncclFloat32;
  case Dtype::f64:
    return ncclFloat64;
  case Dtype::bf16:
    return ncclBfloat16;
  case Dtype::f16:
    return ncclFloat16;
  case Dtype::i32:
    return ncclInt32;
  case Dtype::i64:
    return ncclInt64;
  case Dtype::f8E4M3FN:
  case Dtype::f8E5M2:
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 24, 0)
    return type == Dtype::f8E4M3FN ? ncclFloat8e4m3 : ncclFloat8e5m2;
#else
    // Moved as bytes: gathers and copies only (reductions need NCCL 2.24).
    return ncclUint8;
#endif
  }
  return ncclFloat32;
}

/// Events reused across collectives instead of created and destroyed three
/// per collective (the stream orderings and the watchdog's). An event may
/// go back as soon as the waits on it are enqueued: cudaStreamWaitEvent
/// waits for the record before it, not for a later one.
class EventPool {
public:
  EventPool() = default;
  EventPool(const EventPool &) = delete;
  EventPool &operator=(const EventPool &) = delete;
  ~EventPool() {
    for (cudaEvent_t event : free_)
      cudaEventDestroy(event);
  }
  cudaEvent_t take() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!free_.empty())
        return free_.pop_back_val();
    }
    cudaEvent_t event;
    checkCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
              "event create");
    return event;
  }
  void give(cudaEvent_t event) {
    std::lock_guard<std::mutex> lock(mutex_);
    free_.push_back(event);
  }

private:
  std::mutex mutex_; // the main thread takes, the watchdog gives back too
  llvm::SmallVector<cudaEvent_t, 16> free_;
};

/// A collective in flight on the communication stream.
struct NCCLRequest : Request {
  NCCLRequest(EventPool &events, cudaStream_t compute)
      : events(events), done(events.take()), compute(compute) {}
  ~NCCLRequest() override {
    if (done)
      events.give(done);
  }
  /// Whether it has completed, without waiting (then finished).
  bool test() override {
    // Captured work is watched through its graph's replays; its event
    // cannot be queried.
    if (done && !joins) {
      cudaError_t rc = cudaEventQuery(done);
      if (rc == cudaErrorNotReady)
        return false;
      checkCuda(rc, "the completion event of a transfer");
    }
    finish();
    return true;
  }
  void finish() override {
    if (!done)
      return;
    // The host's part only (ordering the compute stream after the
    // collective); the device-side timing is the trace's stream events.
    double begin = trace::recording() ? StepTrace::now() : 0;
    checkCuda(cudaStreamWaitEvent(compute, done, 0), "stream wait");
    events.give(std::exchange(done, nullptr));
    if (joins)
      joins->joined(joinToken);
    if (trace::recording())
      trace::wait(collective, axisMask, bytes, begin, StepTrace::now());
  }
  EventPool &events;
  cudaEvent_t done;
  cudaStream_t compute;
  const char *collective = "";
  unsigned axisMask = 0;
  int64_t bytes = -1;
  /// Set when issued under CUDA graph capture: finish() joins it.
  CaptureJoins *joins = nullptr;
  int64_t joinToken = -1;
};

/// Moves a tensor split along a middle dimension between its natural layout
/// [outer][total rows] and rank-major [parts][outer][rows] on `stream` with
/// strided 2-D copies. `total` may be less than parts x rows (uneven FSDP
/// shards): rank-major padding rows are zeroed, or dropped going back.
void rearrange(const char *src, char *dst, int64_t outer, int64_t parts,
               int64_t rows, int64_t total, int64_t rowBytes, bool toRankMajor,
               cudaStream_t stream) {
  if (toRankMajor && total != parts * rows)
    checkCuda(cudaMemsetAsync(dst, 0, size_t(parts * outer * rows * rowBytes),
                              stream),
              "zero padding");
  for (int64_t p = 0; p < parts; ++p) {
    int64_t valid = std::clamp<int64_t>(total - p * rows, 0, rows);
    if (valid == 0)
      continue;
    size_t naturalPitch = total * rowBytes, partPitch = rows * rowBytes;
    if (toRankMajor)
      checkCuda(cudaMemcpy2DAsync(dst + p * outer * partPitch, partPitch,
                                  src + p * partPitch, naturalPitch,
                                  valid * rowBytes, outer,
                                  cudaMemcpyDeviceToDevice, stream),
                "rearrange");
    else
      checkCuda(cudaMemcpy2DAsync(dst + p * partPitch, naturalPitch,
                                  src + p * outer * partPitch, partPitch,
                                  valid * rowBytes, outer,
                                  cudaMemcpyDeviceToDevice, stream),
                "rearrange");
  }
}

class NCCLCommunicator : public Communicator {
public:
  NCCLCommunicator(const std::vector<int64_t> &meshShape,
                   double startupTimeoutSeconds, Bootstrap &bootstrap)
      : bootstrap_(bootstrap) {
    mesh_ = meshShape;
    setTimeout(startupTimeoutSeconds);
    chooseLaunchOrder();
    adopt(bootstrap);
    // One GPU per process: the process's index among those on its node.
    int localRank = bootstrap.localRank(), localSize = bootstrap.localSize();
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0)
      fatal("the NCCL communicator needs a CUDA device, and none is visible");
    // A process that sees one GPU (the launcher bound it) uses it, as the
    // CUDA device does; one that sees several takes its local rank's.
    if (devices > 1 && (localSize > devices || localRank >= devices))
      fatal(std::to_string(std::max(localSize, localRank + 1)) +
            " ranks share a node with " + std::to_string(devices) +
            " GPUs; NCCL needs one GPU per rank (launch at most " +
            std::to_string(devices) + " ranks per node)");
    checkCuda(cudaSetDevice(devices == 1 ? 0 : localRank), "set device");

    ncclUniqueId id;
    if (rank_ == 0)
      checkNccl(ncclGetUniqueId(&id), "unique id");
    bootstrap.broadcast(&id, sizeof(id));
    withinTimeout("ncclCommInitRank",
                  [&] { return ncclCommInitRank(&world_, size_, id, rank_); });
    comms_.push_back(world_);
    checkCuda(cudaEventCreateWithFlags(&lastIssued_, cudaEventDisableTiming),
              "event create");
    int device = 0;
    checkCuda(cudaGetDevice(&device), "get device");
    watchdog_ = std::thread([this, device] { watch(device); });
  }

  ~NCCLCommunicator() override {
    for (auto &[mask, stream] : streams_)
      cudaStreamSynchronize(stream);
    for (auto &[key, channel] : channels_)
      cudaStreamSynchronize(channel.stream);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    watchdog_.join();
    for (Watched &w : watched_)
      events_.give(w.done);
    // Returns at once unless something still references a communicator
    // (a CUDA graph that captured its work; the device destroys those
    // first): then the rank ends rather than hang at exit.
    std::vector<ncclComm_t> comms = comms_;
    if (!runWithin(std::chrono::duration<double>(kTeardownSeconds), [comms] {
          for (ncclComm_t comm : comms)
            ncclCommDestroy(comm);
        })) {
      std::fprintf(stderr,
                   "error: ncclCommDestroy did not return within %.0f s at "
                   "exit (is a CUDA graph that captured NCCL work still "
                   "alive?); ending this rank\n",
                   kTeardownSeconds);
      std::fflush(stderr);
      std::_Exit(1);
    }
    cudaEventDestroy(lastIssued_);
    for (auto &[mask, stream] : streams_)
      cudaStreamDestroy(stream);
    for (auto &[key, channel] : channels_)
      cudaStreamDestroy(channel.stream);
  }

  std::unique_ptr<Request> allGather(const void *in, void *out, Dtype type,
                                     int64_t outer, int64_t dimSize,
                                     int64_t inner, int64_t gatheredSize,
                                     unsigned axisMask,
                                     void *planned) override {
    begin("all_gather", axisMask, in, out);
    int64_t parts = groupSize(axisMask);
    int64_t count = outer * dimSize * inner;
    bool direct = outer == 1 && gatheredSize == parts * dimSize;
    char *recv = direct ? static_cast<char *>(out)
                        : scratch(parts * count * dtypeBytes(type), planned);
    checkNccl(ncclAllGather(in, recv, count, ncclType(type), group(axisMask),
                            stream_),
              "all_gather");
    if (!direct) {
      rearrange(recv, static_cast<char *>(out), outer, parts, dimSize,
                gatheredSize, inner * dtypeBytes(type),
                /*toRankMajor=*/false, stream_);
      if (!planned)
        release(recv);
    }
    return end("all_gather", axisMask, type, parts * count);
  }

  std::unique_ptr<Request> reduceScatter(const void *in, void *out, Dtype type,
                                         int64_t outer, int64_t dimSize,
                                         int64_t inner, unsigned axisMask,
                                         void *planned) override {
    begin("reduce_scatter", axisMask, in, out);
    int64_t parts = groupSize(axisMask);
    int64_t rows = (dimSize + parts - 1) / parts;
    int64_t count = outer * rows * inner;
    const char *send = static_cast<const char *>(in);
    char *packed = nullptr;
    if (outer > 1 || rows * parts != dimSize) {
      packed = scratch(parts * count * dtypeBytes(type), planned);
      rearrange(send, packed, outer, parts, rows, dimSize,
                inner * dtypeBytes(type),
                /*toRankMajor=*/true, stream_);
      send = packed;
    }
    checkNccl(ncclReduceScatter(send, out, count, ncclType(type), ncclSum,
                                group(axisMask), stream_),
              "reduce_scatter");
    if (packed && !planned)
      release(packed);
    return end("reduce_scatter", axisMask, type, parts * count);
  }

  std::unique_ptr<Request> allReduce(const void *in, void *out, Dtype type,
                                     int64_t count, Reduction reduction,
                                     unsigned axisMask) override {
    begin("all_reduce", axisMask, in, out);
    ncclRedOp_t op = reduction == Reduction::Max       ? ncclMax
                     : reduction == Reduction::Average ? ncclAvg
                                                       : ncclSum;
    checkNccl(ncclAllReduce(in, out, count, ncclType(type), op, group(axisMask),
                            stream_),
              "all_reduce");
    return end("all_reduce", axisMask, type, count);
  }

  std::unique_ptr<Request> allToAll(const void *in, void *out, Dtype type,
                                    int64_t splitOuter, int64_t splitDim,
                                    int64_t splitInner, int64_t concatOuter,
                                    int64_t concatDim, int64_t concatInner,
                                    unsigned axisMask, void *planned) override {
    begin("all_to_all", axisMask, in, out);
    int64_t parts = groupSize(axisMask);
    int64_t total = splitOuter * splitDim * splitInner * dtypeBytes(type);
    int64_t partBytes = total / parts;
    char *send = scratch(2 * total, planned), *recv = send + total;
    rearrange(static_cast<const char *>(in), send, splitOuter, parts,
              splitDim / parts, splitDim, splitInner * dtypeBytes(type),
              /*toRankMajor=*/true, stream_);
    ncclComm_t comm = group(axisMask);
    checkNccl(ncclGroupStart(), "group start");
    for (int64_t p = 0; p < parts; ++p) {
      checkNccl(ncclSend(send + p * partBytes, partBytes, ncclChar, int(p),
                         comm, stream_),
                "send");
      checkNccl(ncclRecv(recv + p * partBytes, partBytes, ncclChar, int(p),
                         comm, stream_),
                "recv");
    }
    checkNccl(ncclGroupEnd(), "group end");
    rearrange(recv, static_cast<char *>(out), concatOuter, parts, concatDim,
              parts * concatDim, concatInner * dtypeBytes(type),
              /*toRankMajor=*/false, stream_);
    if (!planned)
      release(send);
    return end("all_to_all", axisMask, type,
               splitOuter * splitDim * splitInner);
  }

  std::unique_ptr<Request> broadcast(const void *in, void *out, Dtype type,
                                     int64_t count, int64_t root,
                                     unsigned axisMask) override {
    begin("broadcast", axisMask, in, out);
    checkNccl(ncclBroadcast(in, out, count, ncclType(type), int(root),
                            group(axisMask), stream_),
              "broadcast");
    return end("broadcast", axisMask, type, count);
  }

  // Pipeline transfers: one communicator and stream per channel
  // (PeerChannels.h), made at start by preparePeers; boundary tensors move
  // as bytes, from the executor's frames and send rings.
  std::unique_ptr<Request> send(const void *in, Dtype type, int64_t count,
                                int64_t peer, PeerFlow flow, int) override {
    Channel &c = channel(coordinate(kPP), peer, flow);
    begin("send", 1u << kPP, in, nullptr, c.stream);
    checkNccl(ncclSend(in, size_t(count * dtypeBytes(type)), ncclUint8,
                       c.peerIndex, c.comm, stream_),
              "send");
    return end("send", 1u << kPP, type, count, peer);
  }
  std::unique_ptr<Request> recv(void *out, Dtype type, int64_t count,
                                int64_t peer, PeerFlow flow, int) override {
    Channel &c = channel(peer, coordinate(kPP), flow);
    begin("recv", 1u << kPP, nullptr, out, c.stream);
    checkNccl(ncclRecv(out, size_t(count * dtypeBytes(type)), ncclUint8,
                       c.peerIndex, c.comm, stream_),
              "recv");
    return end("recv", 1u << kPP, type, count, peer);
  }
  /// NCCL matches in order; the tags are not sent.
  int maxPeerTag() const override { return INT_MAX; }

  /// Splits the pipeline group's communicator into the channels, round by
  /// round: every member of the group calls each split. NCCL connects a
  /// pair lazily, in its first transfer, and that call waits on the host
  /// for the peer's: each new channel carries one byte at once, both of
  /// its ranks in the same round, so no step's transfer ever blocks the
  /// host (two channels' first transfers, issued in opposite orders on two
  /// ranks, would wait for each other).
  void preparePeers() override {
    int64_t me = coordinate(kPP);
    void *byte = nullptr;
    checkCuda(cudaMalloc(&byte, 256), "pipeline channel warm-up buffer");
    for (const std::vector<PeerChannel> &round :
         peerChannelRounds(mesh_[kPP])) {
      int color = NCCL_SPLIT_NOCOLOR, key = 0;
      const PeerChannel *mine = nullptr;
      for (auto [i, c] : llvm::enumerate(round))
        if (c.from == me || c.to == me) {
          color = int(i);
          key = c.from == me ? 0 : 1;
          mine = &c;
        }
      ncclComm_t parent = group(1u << kPP), comm = nullptr;
      withinTimeout("ncclCommSplit of a pipeline channel", [&] {
        return ncclCommSplit(parent, color, key, &comm, nullptr);
      });
      if (!mine)
        continue;
      {
        std::lock_guard<std::mutex> lock(mutex_);
        comms_.push_back(comm);
      }
      Channel &c = channels_[{mine->from, mine->to, mine->flow}];
      c.comm = comm;
      c.peerIndex = 1 - key;
      checkCuda(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking),
                "stream create");
      bool sender = key == 0;
      withinTimeout("the first transfer on a pipeline channel", [&] {
        ncclResult_t rc =
            sender ? ncclSend(byte, 1, ncclUint8, c.peerIndex, comm, c.stream)
                   : ncclRecv(byte, 1, ncclUint8, c.peerIndex, comm, c.stream);
        if (rc == ncclSuccess && cudaStreamSynchronize(c.stream) != cudaSuccess)
          rc = ncclUnhandledCudaError;
        return rc;
      });
    }
    cudaFree(byte);
  }

  std::unique_ptr<Request> sendRecv(const void *in, void *out, Dtype type,
                                    int64_t count, int64_t shift,
                                    unsigned axisMask) override {
    begin("send_recv", axisMask, in, out);
    ncclComm_t comm = group(axisMask);
    int size = 0, me = 0;
    checkNccl(ncclCommCount(comm, &size), "comm count");
    checkNccl(ncclCommUserRank(comm, &me), "comm rank");
    int to = int(((me + shift) % size + size) % size);
    int from = int(((me - shift) % size + size) % size);
    checkNccl(ncclGroupStart(), "group start");
    checkNccl(ncclSend(in, count, ncclType(type), to, comm, stream_), "send");
    checkNccl(ncclRecv(out, count, ncclType(type), from, comm, stream_),
              "recv");
    checkNccl(ncclGroupEnd(), "group end");
    return end("send_recv", axisMask, type, count);
  }

  void prepareGroups(const std::vector<unsigned> &axisMasks) override {
    for (unsigned mask : axisMasks) {
      group(mask);
      streamFor(mask);
    }
  }

  void barrier() override {
    checkCuda(cudaDeviceSynchronize(), "synchronize");
    bootstrap_.barrier();
  }

  void watchStream(const std::string &what, cudaStream_t stream) override {
    watchUntil(what, stream);
  }

  void checkCaptureJoined(const std::string &graph) override {
    std::string error = captureJoins_.takeUnjoinedError(graph);
    if (!error.empty())
      fatal(error);
  }

protected:
  /// Host values go through device scratch on the compute stream, ordered
  /// after the step before; the synchronization at the end makes them
  /// readable on return (and the watchdog times the collective out).
  void
  runOnHost(void *values, int64_t bytes,
            llvm::function_ref<std::unique_ptr<Request>(const void *, void *)>
                collective) override {
    void *device = nullptr;
    checkCuda(cudaMallocAsync(&device, size_t(2 * bytes), compute_),
              "host value staging");
    char *in = static_cast<char *>(device), *out = in + bytes;
    checkCuda(cudaMemcpyAsync(in, values, size_t(bytes), cudaMemcpyHostToDevice,
                              compute_),
              "host value copy");
    collective(in, out)->finish();
    checkCuda(cudaMemcpyAsync(values, out, size_t(bytes),
                              cudaMemcpyDeviceToHost, compute_),
              "host value copy");
    checkCuda(cudaFreeAsync(device, compute_), "host value staging free");
    checkCuda(cudaStreamSynchronize(compute_), "host value agreement");
  }

private:
  /// The communication stream of a mesh-axis group: collectives of
  /// different groups (FSDP's gathers, TP's reductions) overlap each other
  /// as well as the compute stream.
  cudaStream_t streamFor(unsigned axisMask) {
    cudaStream_t &stream = streams_[axisMask];
    if (!stream)
      checkCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                "stream create");
    return stream;
  }

  /// Makes the group's stream current (stream_, which the collective and
  /// its staging use) and orders it after the compute stream's work so far.
  /// A pipeline transfer passes its channel's stream (`on`): it stays out
  /// of the serialized order (NCCL's implicit order is off under pipeline
  /// parallelism, NCCLLaunchOrder.h), which would queue it behind
  /// collectives that wait for its peer's progress; its channel is its own
  /// FIFO.
  void begin(const char *collective, unsigned axisMask, const void *in,
             const void *out, cudaStream_t on = nullptr) {
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    unsigned long long captureId = 0;
    checkCuda(cudaStreamGetCaptureInfo(compute_, &status, &captureId),
              "capture status");
    capturing_ = status != cudaStreamCaptureStatusNone;
    captureId_ = capturing_ ? captureId : 0;
    // A captured step replays the addresses of its eager first run, which
    // were checked then; the check stays out of captures, where only
    // stream work belongs.
    if (!capturing_)
      refuseHostBuffers(collective, axisMask, in, out);
    stream_ = on ? on : streamFor(axisMask);
    peerTransfer_ = on != nullptr;
    cudaEvent_t ready = events_.take();
    checkCuda(cudaEventRecord(ready, compute_), "event record");
    checkCuda(cudaStreamWaitEvent(stream_, ready, 0), "stream wait");
    events_.give(ready);
    if (!peerTransfer_)
      orderAfterLastIssued();
    // A traced step's collectives are timed on their stream (the device
    // resolves the pair after the step; trace::DeviceSpan).
    traceBegin_ = nullptr;
    if (trace::deviceTiming() && !capturing_) {
      checkCuda(cudaEventCreate(&traceBegin_), "event create");
      checkCuda(cudaEventRecord(traceBegin_, stream_), "event record");
    }
  }

  /// Picks how the group communicators' collectives are ordered
  /// (NCCLLaunchOrder.h), before any NCCL call reads the environment.
  void chooseLaunchOrder() {
    int version = 0;
    ncclGetVersion(&version); // reads no environment
    bool pipelined = mesh_[kPP] > 1;
    NCCLLaunchOrderChoice choice = applyNCCLLaunchOrder(version, pipelined);
    launchOrder_ = choice.order;
    if (std::getenv("TITAN_NCCL_LOG") ||
        choice.why.find("overridden") != std::string::npos)
      std::fprintf(stderr, "titan: NCCL %d, launch order: %s\n", version,
                   choice.why.c_str());
  }

  /// Serialized order: the collective about to be issued on stream_ waits
  /// for the one issued before it when that ran on another communicator's
  /// stream, making one total order on every rank. Only within one
  /// capture, or among eager collectives: a captured stream cannot wait
  /// for an event recorded outside its capture (eagerly, or in another
  /// step's capture), and it need not, since every collective of the work
  /// before was joined into the compute stream, which stream_ waits for.
  void orderAfterLastIssued() {
    if (launchOrder_ != NCCLLaunchOrder::Serialized || !lastIssuedStream_ ||
        lastIssuedStream_ == stream_ || lastIssuedCapture_ != captureId_)
      return;
    checkCuda(cudaStreamWaitEvent(stream_, lastIssued_, 0), "stream wait");
  }

  /// NCCL needs device memory; a host pointer would fail inside NCCL or
  /// fault on the device, far from the caller. cudaPointerGetAttributes is
  /// a host-side lookup of about a microsecond, against a collective's tens
  /// of microseconds at least, so every eager collective is checked.
  void refuseHostBuffers(const char *collective, unsigned axisMask,
                         const void *in, const void *out) {
    for (const void *ptr : {in, out}) {
      if (!ptr)
        continue;
      cudaPointerAttributes attributes;
      cudaError_t rc = cudaPointerGetAttributes(&attributes, ptr);
      if (rc != cudaSuccess)
        cudaGetLastError(); // clears the error; treated as host memory
      if (rc == cudaSuccess && attributes.type != cudaMemoryTypeUnregistered &&
          attributes.type != cudaMemoryTypeHost)
        continue;
      fatal("internal error: " + describe(collective, axisMask) + " at " +
            context() + " was given a host pointer as its " +
            (ptr == in ? "input" : "output") +
            "; NCCL's collectives take device memory (host values go "
            "through Communicator::hostAllReduce or hostBroadcast)");
    }
  }

  /// The request for the collective just issued, which the watchdog also
  /// tracks (with its own event: the request's goes back on finish()),
  /// unless it was captured into a graph: the graph's replays are watched.
  /// `count` elements of `type` in its larger buffer (nccl-tests' size)
  /// go into the flight record, whose entry the watchdog completes.
  std::unique_ptr<Request> end(const char *collective, unsigned axisMask,
                               Dtype type, int64_t count, int64_t peer = -1) {
    auto req = std::make_unique<NCCLRequest>(events_, compute_);
    req->collective = collective;
    req->axisMask = axisMask;
    int64_t bytes = count * dtypeBytes(type);
    req->bytes = bytes;
    checkCuda(cudaEventRecord(req->done, stream_), "event record");
    if (launchOrder_ == NCCLLaunchOrder::Serialized && !peerTransfer_) {
      checkCuda(cudaEventRecord(lastIssued_, stream_), "event record");
      lastIssuedStream_ = stream_;
      lastIssuedCapture_ = captureId_;
    }
    if (capturing_) {
      req->joins = &captureJoins_;
      req->joinToken = captureJoins_.issued(describe(collective, axisMask) +
                                            " at " + context());
    }
    if (cudaEvent_t begun = std::exchange(traceBegin_, nullptr)) {
      cudaEvent_t done = nullptr;
      checkCuda(cudaEventCreate(&done), "event create");
      checkCuda(cudaEventRecord(done, stream_), "event record");
      trace::recordDevice({{collective, "collective", 0, 0,
                            trace::communicationTrack(axisMask), bytes, ""},
                           begun,
                           done});
    }
    if (!capturing_) {
      std::string what = describe(collective, axisMask);
      if (peer >= 0)
        what += (std::string(collective) == "send" ? " to" : " from") +
                std::string(" pipeline rank ") + std::to_string(peer);
      watchUntil(what, stream_,
                 recordIssued(collective, axisMask, type, count,
                              StepTrace::now(),
                              peer >= 0 ? peerWorldRank(peer) : -1));
    }
    return req;
  }

  /// Has the watchdog track the work enqueued so far on `stream`.
  void watchUntil(const std::string &what, cudaStream_t stream,
                  int64_t record = -1) {
    Watched w;
    w.record = record;
    w.done = events_.take();
    checkCuda(cudaEventRecord(w.done, stream), "event record");
    // The messages are built now: the context and timeout belong to the
    // main thread and change between steps.
    w.what = what + " at " + context();
    w.timeoutMessage =
        Communicator::timeoutMessage(what, context(), timeoutSeconds());
    w.deadline =
        std::chrono::steady_clock::now() +
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
            std::chrono::duration<double>(timeoutSeconds()));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      watched_.push_back(std::move(w));
    }
  }

  /// Why the watchdog stops the run when querying the event after `what`
  /// returns `rc`, neither success nor cudaErrorNotReady.
  static std::string queryFailure(const std::string &what, cudaError_t rc) {
    if (rc == cudaErrorCapturedEvent)
      return "internal error: the watchdog's event after " + what +
             " was recorded under CUDA graph capture "
             "(cudaErrorCapturedEvent), where collectives are watched "
             "through their graph's replays; rerun with "
             "--debug.no_cuda_graphs";
    return "CUDA failed under " + what + ": " + cudaGetErrorName(rc) + " (" +
           cudaGetErrorString(rc) + ")";
  }

  /// The watchdog: retires completed collectives, and aborts on one past
  /// its deadline or on an asynchronous NCCL error.
  void watch(int device) {
    // The current device is per thread; this one must use the rank's.
    checkCuda(cudaSetDevice(device), "set device");
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
      wake_.wait_for(lock, std::chrono::milliseconds(100));
      auto now = std::chrono::steady_clock::now();
      std::string failure;
      llvm::erase_if(watched_, [&](Watched &w) {
        cudaError_t rc = cudaEventQuery(w.done);
        if (rc == cudaSuccess) {
          // Completion as the watchdog sees it (up to its 100 ms poll late).
          recordCompleted(w.record, StepTrace::now());
          events_.give(w.done);
          return true;
        }
        if (failure.empty() && rc != cudaErrorNotReady)
          failure = queryFailure(w.what, rc);
        else if (failure.empty() && now > w.deadline)
          failure = w.timeoutMessage;
        return false;
      });
      for (ncclComm_t comm : comms_) {
        ncclResult_t async = ncclSuccess;
        if (failure.empty() &&
            ncclCommGetAsyncError(comm, &async) == ncclSuccess &&
            async != ncclSuccess)
          failure = std::string("NCCL failed asynchronously: ") +
                    ncclGetErrorString(async) +
                    " (a peer may have exited; see its output)";
      }
      if (failure.empty())
        continue;
      std::fflush(stdout);
      std::fprintf(stderr, "error: %s\n", failure.c_str());
      std::fflush(stderr);
      abortAndStop(failure);
    }
  }

  /// Stops this rank's NCCL kernels (ncclCommAbort), so the host is not
  /// left blocked in a synchronization, then every rank. The abort can
  /// itself block (it waits, as ncclCommDestroy does, for what references
  /// the communicators, and NCCL only promises a prompt abort for
  /// nonblocking communicators): past a deadline the rank goes on to stop
  /// the job without it, and the job's stop is itself bounded.
  [[noreturn]] void abortAndStop(const std::string &failure) {
    std::vector<ncclComm_t> comms = comms_;
    abortThenStop(
        std::chrono::duration<double>(kTeardownSeconds),
        [comms] {
          for (ncclComm_t comm : comms)
            ncclCommAbort(comm);
        },
        "ncclCommAbort", failure);
  }

  /// Runs `create` (a blocking NCCL communicator creation, which waits for
  /// every peer of the world) on a helper thread, and stops the job when it
  /// has not returned within the timeout: a peer that never starts or
  /// stalls in start-up cannot hang this rank. (The stuck thread ends with
  /// the process, which fatal() aborts with every other rank.)
  template <typename Create>
  void withinTimeout(const char *what, Create create) {
    int device = 0;
    checkCuda(cudaGetDevice(&device), "get device");
    // Shared: a helper left behind still writes it.
    auto rc = std::make_shared<ncclResult_t>(ncclSuccess);
    if (!runWithin(std::chrono::duration<double>(timeoutSeconds()),
                   [rc, create, device] {
                     cudaSetDevice(device);
                     *rc = create();
                   }))
      fatal(
          std::string("NCCL start-up (") + what + ") did not complete within " +
          std::to_string(int64_t(timeoutSeconds())) + " s during " + context() +
          ": a peer has not started or is stalled (comm.init_timeout_seconds)");
    checkNccl(*rc, what);
  }

  /// Stream-ordered scratch memory, freed in stream order after its last use.
  /// `bytes` of device scratch: the planned buffer when given, else
  /// allocated on the stream (and released with release()).
  char *scratch(int64_t bytes, void *planned) {
    return planned ? static_cast<char *>(planned) : staging(bytes);
  }

  char *staging(int64_t bytes) {
    void *ptr = nullptr;
    checkCuda(cudaMallocAsync(&ptr, size_t(bytes), stream_), "staging alloc");
    return static_cast<char *>(ptr);
  }
  void release(void *ptr) {
    checkCuda(cudaFreeAsync(ptr, stream_), "staging free");
  }

  /// The communicator of the ranks sharing this rank's coordinates outside
  /// `axisMask`, split from the world one on first use.
  ncclComm_t group(unsigned axisMask) {
    if (axisMask == (1u << kNumAxes) - 1)
      return world_;
    auto it = groups_.find(axisMask);
    if (it != groups_.end())
      return it->second;
    ncclComm_t comm;
    withinTimeout("ncclCommSplit", [&] {
      return ncclCommSplit(world_, int(groupColor(axisMask)), rank_, &comm,
                           nullptr);
    });
    {
      std::lock_guard<std::mutex> lock(mutex_);
      comms_.push_back(comm);
    }
    return groups_[axisMask] = comm;
  }

  /// A pipeline channel's communicator (2 ranks: the sender is 0), its
  /// stream and the peer's index in it.
  struct Channel {
    ncclComm_t comm = nullptr;
    cudaStream_t stream = nullptr;
    int peerIndex = 0;
  };
  /// (from, to, flow) -> the channel that carries those messages.
  Channel &channel(int64_t from, int64_t to, PeerFlow flow) {
    auto it = channels_.find({from, to, int(flow)});
    if (it == channels_.end())
      fatal("internal error: no pipeline channel for " +
            std::string(flow == PeerFlow::Activations ? "activations"
                                                      : "gradients") +
            " from pipeline rank " + std::to_string(from) + " to " +
            std::to_string(to) +
            " (preparePeers makes those between neighbours at start)");
    return it->second;
  }

  Bootstrap &bootstrap_; ///< the launcher's (initCommunicator owns it)
  ncclComm_t world_ = nullptr;
  std::map<std::tuple<int64_t, int64_t, int>, Channel> channels_;
  /// Whether the transfer being issued is a pipeline channel's.
  bool peerTransfer_ = false;
  /// The stream of the collective being issued (one of streams_).
  cudaStream_t stream_ = nullptr;
  std::map<unsigned, cudaStream_t> streams_;
  /// The stream the compiled step's kernels run on.
  cudaStream_t compute_ = cudaStreamPerThread;
  std::map<unsigned, ncclComm_t> groups_;

  /// Whether the collective being issued is captured into a CUDA graph.
  bool capturing_ = false;
  /// The capture's id (cudaStreamGetCaptureInfo) while capturing, else 0.
  unsigned long long captureId_ = 0;
  /// The collectives issued under capture and not yet joined.
  CaptureJoins captureJoins_;
  NCCLLaunchOrder launchOrder_ = NCCLLaunchOrder::Implicit;
  /// Serialized order: recorded after each collective on its stream.
  cudaEvent_t lastIssued_ = nullptr;
  cudaStream_t lastIssuedStream_ = nullptr;
  unsigned long long lastIssuedCapture_ = 0;
  /// The timing event begin() recorded for the collective being issued
  /// (a traced step's; else null).
  cudaEvent_t traceBegin_ = nullptr;

  /// Outlives the destructor's body, which gives the watched events back.
  EventPool events_;
  /// A collective (or a graph's replay) the watchdog waits for.
  struct Watched {
    cudaEvent_t done = nullptr;
    std::chrono::steady_clock::time_point deadline;
    std::string what; // "all_reduce over [tp] at step 3"
    std::string timeoutMessage;
    int64_t record = -1; ///< flight-recorder entry
  };
  std::mutex mutex_; // guards watched_, comms_ and stopping_
  std::condition_variable wake_;
  std::vector<Watched> watched_;
  std::vector<ncclComm_t> comms_; // world_ and every group, to poll and abort
  bool stopping_ = false;
  std::thread watchdog_;
};

} // namespace

std::unique_ptr<Communicator>
titanrt::createNCCLCommunicator(const std::vector<int64_t> &meshShape,
                                double startupTimeoutSeconds,
                                Bootstrap &bootstrap) {
  return std::make_unique<NCCLCommunicator>(meshShape, startupTimeoutSeconds,
                                            bootstrap);
}

extern "C" {

/// libtitanrt_nccl's entry: a NCCL communicator for the mesh of `axes`
/// sizes whose ranks meet through `bootstrap`.
__attribute__((visibility("default"))) Communicator *
titan_rt_create_nccl_communicator(const int64_t *mesh, int64_t axes,
                                  double startupTimeoutSeconds,
                                  Bootstrap *bootstrap) {
  std::vector<int64_t> shape(mesh, mesh + axes);
  return createNCCLCommunicator(shape, startupTimeoutSeconds, *bootstrap)
      .release();
}

} // extern "C"
