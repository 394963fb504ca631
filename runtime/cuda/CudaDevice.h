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
