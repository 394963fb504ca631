//===- CudaDevice.cpp - the CUDA target's device --------------------------===//

#include "CudaDevice.h"

#include "CapturedGraphs.h"
#include "Communicator.h"
#include "Elementwise.h"
#include "Error.h"
#include "Trace.h"

#include "titan/Contract/CUDAWorkspaces.h"
#include "titan/Support/Format.h"
#include "titanrt/KernelABI.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

using namespace titanrt;
using namespace titanrt::cuda;

void titanrt::cuda::checkCuda(cudaError_t rc, const std::string &what) {
  if (rc != cudaSuccess)
    kernelFatal("CUDA error in " + what + ": " + cudaGetErrorName(rc) + " (" +
                cudaGetErrorString(rc) + ")");
}

KernelContext::KernelContext()
    : gemms(size_t(titan::cuda::kGemmWorkspaceBytes)) {}

KernelContext::~KernelContext() {
  for (cudaEvent_t event : freeEvents)
    cudaEventDestroy(event);
  if (copies)
    cudaStreamDestroy(copies);
}

cudaStream_t KernelContext::copyStream() {
  if (!copies)
    checkCuda(cudaStreamCreateWithFlags(&copies, cudaStreamNonBlocking),
              "creating the copy stream");
  return copies;
}

cudaEvent_t KernelContext::takeEvent() {
  if (freeEvents.empty()) {
    cudaEvent_t event = nullptr;
    checkCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
              "creating an event");
    return event;
  }
  cudaEvent_t event = freeEvents.back();
  freeEvents.pop_back();
  return event;
}

void KernelContext::returnEvent(cudaEvent_t event) {
  freeEvents.push_back(event);
}

namespace {

class CudaDevice final : public Device {
public:
  std::string target() const override { return "cuda"; }
  std::string describe() const override { return description; }
  Backend communicatorBackend() const override { return Backend::NCCL; }

  void select(int64_t localRank) override {
    int count = 0;
    cudaError_t rc = cudaGetDeviceCount(&count);
    if (rc != cudaSuccess || count == 0)
      fatal(std::string("no CUDA GPU is visible to this process (") +
            (rc == cudaSuccess ? "cudaGetDeviceCount found none"
                               : std::string("cudaGetDeviceCount: ") +
                                     cudaGetErrorString(rc)) +
            "); this executable was compiled with titan-compile "
            "--target=cuda; use --target=cpu to train on the host");
    // A process that sees one GPU (a launcher bound it, e.g. srun
    // --gpus-per-task=1) uses it; one that sees several takes the one of
    // its local rank.
    int64_t index = count == 1 ? 0 : localRank;
    if (index >= count) {
      const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
      fatal("local rank " + std::to_string(localRank) + " needs GPU " +
            std::to_string(localRank) + " but this process sees " +
            std::to_string(count) +
            " (CUDA_VISIBLE_DEVICES=" + (visible ? visible : "unset") +
            "): launch at most one rank per GPU on each machine");
    }
    checkCuda(cudaSetDevice(int(index)), "cudaSetDevice");
    cudaDeviceProp prop;
    checkCuda(cudaGetDeviceProperties(&prop, int(index)),
              "cudaGetDeviceProperties");
    std::string error;
    if (!kernelsRunHere(error))
      fatal(std::string("libtitanrt_cuda has no code for this GPU (") +
            prop.name + ", sm_" + std::to_string(prop.major) +
            std::to_string(prop.minor) + "): " + error +
            "; rebuild titan with -DTITAN_CUDA_ARCHS including it and "
            "recompile with --cuda-arch");
    description = std::string(prop.name) + " (GPU " + std::to_string(index) +
                  " of " + std::to_string(count) + ", sm_" +
                  std::to_string(prop.major) + std::to_string(prop.minor) +
                  ", " + titan::humanBytes(double(prop.totalGlobalMem)) + ")";
  }

  char *allocateArena(int64_t bytes, uint64_t pattern) override {
    size_t size = size_t(std::max<int64_t>(bytes, 256));
    void *base = nullptr;
    cudaError_t rc = cudaMalloc(&base, size);
    if (rc != cudaSuccess) {
      size_t free = 0, total = 0;
      cudaMemGetInfo(&free, &total);
      fatal("out of GPU memory: cannot allocate the planned arena of " +
            std::to_string(bytes) + " bytes (" +
            titan::humanBytes(double(bytes)) + "; the GPU has " +
            titan::humanBytes(double(free)) + " free of " +
            titan::humanBytes(double(total)) +
            "; titan-compile --emit=memory shows what the arena holds)");
    }
    fillWords(base, size, pattern, kernelContext().stream);
    checkCuda(cudaStreamSynchronize(kernelContext().stream),
              "filling the arena");
    return static_cast<char *>(base);
  }
  void freeArena(char *arena) override {
    // The graphs replay the arena's addresses: they go with it.
    releaseGraphs();
    cudaFree(arena);
  }
  /// Pinned, so that the steps' copies of the offloaded state run at the
  /// bus's speed, asynchronously, and inside CUDA graphs.
  char *allocateHostArena(int64_t bytes) override {
    size_t size = size_t(std::max<int64_t>(bytes, 256));
    void *base = nullptr;
    if (cudaHostAlloc(&base, size, cudaHostAllocDefault) != cudaSuccess) {
      cudaGetLastError();
      fatal("out of pinned host memory: cannot allocate the planned host "
            "arena of " +
            std::to_string(bytes) + " bytes (" +
            titan::humanBytes(double(bytes)) +
            "; training.enable_cpu_offload keeps the parameters, gradients "
            "and optimizer state there; titan-compile --emit=memory shows "
            "it)");
    }
    std::memset(base, 0, size);
    return static_cast<char *>(base);
  }
  void freeHostArena(char *arena) override {
    releaseGraphs(); // they copy from and to its addresses
    cudaFreeHost(arena);
  }
  bool hostAccessible() const override { return false; }
  void copyToHost(void *dst, const char *src, size_t bytes) override {
    checkCuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost),
              "cudaMemcpy from the arena (" + std::to_string(bytes) +
                  " bytes)");
  }
  void copyToDevice(char *dst, const void *src, size_t bytes) override {
    checkCuda(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice),
              "cudaMemcpy into the arena (" + std::to_string(bytes) +
                  " bytes)");
  }
  void zero(char *dst, size_t bytes) override {
    checkCuda(cudaMemset(dst, 0, bytes), "cudaMemset of the arena");
  }

  void setGraphs(bool enabled) override { useGraphs = enabled; }

  void releaseGraphs() override {
    auto destroy = [](cudaGraphExec_t exec) { cudaGraphExecDestroy(exec); };
    graphs.destroyAll(destroy);
    phaseGraphs.destroyAll(destroy);
  }

  void release() override {
    releaseGraphs();
    releaseKernelContext();
  }

  /// Runs a step as a CUDA graph (launch()) and waits for it.
  ///
  /// A traced step (trace::recording()) runs uncaptured, its kernels and
  /// collectives timed by event pairs (a graph's replay cannot be timed
  /// inside), resolved against an anchor event recorded on the idle
  /// stream, whose host time is read once it has completed.
  void run(Step which, void (*step)(char *), char *arena) override {
    cudaStream_t stream = kernelContext().stream;
    auto &c = graphs[size_t(which)];
    static constexpr const char *names[] = {"forward_backward",
                                            "optimizer_step", "eval"};
    const char *name = names[size_t(which)];
    bool traced = trace::recording();
    cudaEvent_t anchor = nullptr;
    double anchorHost = 0;
    if (traced) {
      checkCuda(cudaStreamSynchronize(stream), "the stream before a trace");
      checkCuda(cudaEventCreate(&anchor), "event create");
      checkCuda(cudaEventRecord(anchor, stream), "event record");
      checkCuda(cudaEventSynchronize(anchor), "the trace's anchor event");
      anchorHost = StepTrace::now();
      trace::setDeviceTiming(true);
    }
    if (traced) {
      step(arena);
      ++c.runs; // it made the plans, as an eager run does
    } else {
      launch(c, std::string("the CUDA graph of ") + name, [&] { step(arena); });
    }
    synchronize(std::string("the step ") + name);
    if (traced) {
      trace::setDeviceTiming(false);
      resolveDeviceSpans(anchor, anchorHost);
      cudaEventDestroy(anchor);
    }
  }

  /// A traced pipeline phase runs eagerly and is waited for, so the
  /// executor's span of it is its device time: the host then waits where a
  /// CPU rank does (after its receives), which a verified list allows.
  void runPhase(const std::string &name, void (*fn)(char *, char *),
                char *arena, char *frame) override {
    if (trace::recording()) {
      fn(arena, frame);
      synchronize(name);
      return;
    }
    launch(phaseGraphs[{fn, frame}], "the CUDA graph of " + name,
           [&] { fn(arena, frame); });
  }

  // Per boundary tensor and microbatch: the error's text is built only
  // on an error.
  void copyWithin(char *dst, const char *src, size_t bytes) override {
    cudaError_t rc = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice,
                                     kernelContext().stream);
    if (rc != cudaSuccess)
      checkCuda(rc, "cudaMemcpyAsync within the device (" +
                        std::to_string(bytes) + " bytes)");
  }

  void copyToDeviceInOrder(char *dst, const void *src, size_t bytes) override {
    cudaError_t rc = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                                     kernelContext().stream);
    if (rc != cudaSuccess)
      checkCuda(rc, "cudaMemcpyAsync into the arena (" + std::to_string(bytes) +
                        " bytes)");
  }

  void pinHostMemory(void *ptr, size_t bytes) override {
    // Pageable memory still works (staged by the driver, which may wait for
    // the stream): a failure is not an error.
    if (cudaHostRegister(ptr, bytes, cudaHostRegisterDefault) != cudaSuccess)
      cudaGetLastError();
  }
  void unpinHostMemory(void *ptr) override {
    if (cudaHostUnregister(ptr) != cudaSuccess)
      cudaGetLastError();
  }

  void synchronize(const std::string &what) override {
    cudaError_t rc = cudaStreamSynchronize(kernelContext().stream);
    if (rc != cudaSuccess)
      checkCuda(rc, what + " (kernels run asynchronously: rerun with "
                           "CUDA_LAUNCH_BLOCKING=1 and --debug.no_cuda_graphs "
                           "to stop at the failing op)");
  }

private:
  using Graphs = CapturedGraphs<cudaGraphExec_t, size_t>;

  /// Issues `work` (which enqueues kernels and collectives on the compute
  /// stream) as `c`'s graph: eagerly on its first run, which makes
  /// cuBLASLt's and cuDNN's plans and any allocation outside a capture (or
  /// on every run with graphs off), captured on its second, replayed on
  /// every later one. Its kernel parameters are fixed at capture, so what
  /// changes between runs is read from the arena, whose addresses do not
  /// move.
  template <typename Captured, typename Work>
  void launch(Captured &c, const std::string &name, Work &&work) {
    cudaStream_t stream = kernelContext().stream;
    if (!useGraphs || c.runs++ == 0) {
      work();
      return;
    }
    if (!c.exec) {
      checkCuda(
          cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
          "cudaStreamBeginCapture of " + name);
      work();
      // A collective left unjoined would fail the capture with
      // StreamCaptureUnjoined, naming nothing; this names it.
      if (Communicator *comm = activeCommunicator())
        comm->checkCaptureJoined(name);
      cudaGraph_t graph = nullptr;
      checkCuda(cudaStreamEndCapture(stream, &graph),
                "cudaStreamEndCapture of " + name);
      checkCuda(cudaGraphInstantiate(&c.exec, graph, 0),
                "cudaGraphInstantiate of " + name);
      cudaGraphDestroy(graph);
    }
    checkCuda(cudaGraphLaunch(c.exec, stream), "cudaGraphLaunch of " + name);
    // Its collectives were captured without the communicator's watchdog
    // events (an event recorded under capture cannot be queried): the
    // watchdog watches the replay instead.
    if (Communicator *comm = activeCommunicator())
      comm->watchStream(name, stream);
  }

  /// Gives the event pairs of the step host times: the anchor's plus the
  /// elapsed device time (cudaEventElapsedTime, about 0.5 us resolution).
  static void resolveDeviceSpans(cudaEvent_t anchor, double anchorHost) {
    for (trace::DeviceSpan &d : trace::takeDevice()) {
      auto begin = static_cast<cudaEvent_t>(d.beginEvent);
      auto end = static_cast<cudaEvent_t>(d.endEvent);
      float sinceAnchor = 0, length = 0;
      // A collective's stream may still run after the compute stream's
      // synchronization if nothing waited for it.
      checkCuda(cudaEventSynchronize(end), "a traced span's end event");
      checkCuda(cudaEventElapsedTime(&sinceAnchor, anchor, begin),
                "cudaEventElapsedTime");
      checkCuda(cudaEventElapsedTime(&length, begin, end),
                "cudaEventElapsedTime");
      d.span.begin = anchorHost + 1e3 * double(sinceAnchor);
      d.span.end = d.span.begin + 1e3 * double(length);
      trace::record(std::move(d.span));
      cudaEventDestroy(begin);
      cudaEventDestroy(end);
    }
  }

  Graphs graphs; ///< by Step
  /// Pipeline phases, by (function, frame).
  CapturedGraphs<cudaGraphExec_t, std::pair<void (*)(char *, char *), char *>>
      phaseGraphs;
  bool useGraphs = true;
  std::string description = "GPU";
};

} // namespace

namespace {
/// Heap-held so that no static destructor calls cuBLASLt or cuDNN after
/// the CUDA runtime may have unloaded.
KernelContext *theKernelContext = nullptr;
} // namespace

KernelContext &titanrt::cuda::kernelContext() {
  if (!theKernelContext)
    theKernelContext = new KernelContext;
  return *theKernelContext;
}

KernelEvents::KernelEvents(const char *name) : name(name) {
  if (!trace::deviceTiming())
    return;
  checkCuda(cudaEventCreate(&begin), "event create");
  checkCuda(cudaEventRecord(begin, kernelContext().stream), "event record");
}

KernelEvents::~KernelEvents() {
  if (!begin)
    return;
  cudaEvent_t end = nullptr;
  checkCuda(cudaEventCreate(&end), "event create");
  checkCuda(cudaEventRecord(end, kernelContext().stream), "event record");
  trace::recordDevice({{name, "kernel", 0, 0, trace::kComputeTrack, -1,
                        titan_rt_op ? titan_rt_op : ""},
                       begin,
                       end});
}

void titanrt::cuda::releaseKernelContext() {
  delete theKernelContext;
  theKernelContext = nullptr;
}

extern "C" titanrt::Device *titan_rt_target_device(void) {
  static CudaDevice device;
  return &device;
}
