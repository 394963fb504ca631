//===- CudaDevice.h - the CUDA target's device ------------------*- C++ -*-===//
//
// One GPU per local rank; the arena in device memory (one cudaMalloc);
// every kernel of a step enqueued on the compute stream; the steps
// captured once each as CUDA graphs and replayed. The kernel library's
// shared state (cuBLASLt's plans, cuDNN's graphs) lives here too.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_CUDA_CUDADEVICE_H
#define TITANRT_CUDA_CUDADEVICE_H

#include "Attention.h"
#include "LinearGemm.h"

#include "titanrt/Device.h"

#include <cuda_runtime.h>

#include <memory>
#include <string>
#include <vector>

namespace titanrt::cuda {

/// Stops the run naming the CUDA call that failed and what it was for.
void checkCuda(cudaError_t rc, const std::string &what);

/// What the kernel entry points share.
struct KernelContext {
  /// The stream every kernel of a step runs on: the per-thread default
  /// stream, which the NCCL communicator also orders its collectives
  /// against, and which host copies (on the legacy stream) wait for.
  cudaStream_t stream = cudaStreamPerThread;
  LinearGemms gemms;
  CudnnAttention attention;
  KernelContext();
  ~KernelContext();
  KernelContext(const KernelContext &) = delete;
  KernelContext &operator=(const KernelContext &) = delete;

  /// The copy engine's stream (training.enable_cpu_offload's copies between
  /// the pinned host arena and the arena, kernel.copy_start), created on
  /// first use; a copy forks it from `stream` and its wait joins it back.
  cudaStream_t copyStream();
  /// An event without timing, from a pool (a fork or join point is free
  /// again once a wait has been enqueued on it).
  cudaEvent_t takeEvent();
  void returnEvent(cudaEvent_t event);

private:
  cudaStream_t copies = nullptr;
  std::vector<cudaEvent_t> freeEvents;
};

/// Times one kernel entry's launches on the compute stream with a pair of
/// timing events while the device times a traced step
/// (trace::deviceTiming()); the device resolves them after the step.
class KernelEvents {
public:
  explicit KernelEvents(const char *name);
  ~KernelEvents();
  KernelEvents(const KernelEvents &) = delete;
  KernelEvents &operator=(const KernelEvents &) = delete;

private:
  const char *name;
  cudaEvent_t begin = nullptr;
};

/// The context, created on first use (after the device is selected) and
/// never destroyed by a static destructor (see Device::release).
KernelContext &kernelContext();
/// Destroys the context (its cuBLASLt and cuDNN handles and plans); a later
/// kernel creates a new one.
void releaseKernelContext();

} // namespace titanrt::cuda

#endif // TITANRT_CUDA_CUDADEVICE_H
