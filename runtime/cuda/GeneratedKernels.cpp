//===- GeneratedKernels.cpp - launching the compiler's GPU kernels --------===//
//
// The step's generated kernels (kernel.generic) arrive compiled: one cubin
// (or PTX) image per step module, embedded in the executable, and a kernel
// name per call. The image is loaded once per process with the CUDA
// runtime's library API (no driver API, no JIT for a cubin); each launch is
// a grid-stride loop over the kernel's work items (packs of up to 16 bytes
// of elements), enqueued on the compute stream, so a step's CUDA graph
// captures it like any other kernel.
//
//===----------------------------------------------------------------------===//

#include "titanrt/KernelABI.h"

#include "CudaDevice.h"
#include "Error.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

using namespace titanrt;
using namespace titanrt::cuda;

namespace {

/// Threads per block: a multiple of the warp, enough loads in flight per
/// SM for a memory-bound loop.
constexpr int kThreads = 256;
// The generated kernels' block reductions combine whole warps, at most 16
// (GeneratedDeviceKernels.cpp in lib/Conversion: a shared slot per warp,
// two for a log-sum-exp's (max, sum) pair, in 32).
static_assert(kThreads % 32 == 0 && kThreads <= 512,
              "generated kernels' reductions need whole warps, at most 16");

/// Blocks per SM launched at most; the grid-stride loop covers the rest.
constexpr int kBlocksPerSM = 8;

struct GeneratedKernels {
  std::mutex mutex;
  std::map<const void *, cudaLibrary_t> libraries;
  std::map<std::pair<const void *, std::string>, cudaKernel_t> kernels;
  int multiprocessors = 0;

  cudaKernel_t lookup(const void *image, const char *name) {
    std::lock_guard<std::mutex> lock(mutex);
    auto key = std::make_pair(image, std::string(name));
    if (auto it = kernels.find(key); it != kernels.end())
      return it->second;
    cudaLibrary_t &library = libraries[image];
    if (!library)
      checkCuda(cudaLibraryLoadData(&library, image, nullptr, nullptr, 0,
                                    nullptr, nullptr, 0),
                "loading the step's generated kernels (an image built by "
                "titan-compile for --cuda-arch)");
    cudaKernel_t kernel;
    checkCuda(cudaLibraryGetKernel(&kernel, library, name),
              std::string("finding generated kernel ") + name);
    if (!multiprocessors) {
      int device = 0;
      checkCuda(cudaGetDevice(&device), "cudaGetDevice");
      checkCuda(cudaDeviceGetAttribute(&multiprocessors,
                                       cudaDevAttrMultiProcessorCount, device),
                "the GPU's multiprocessor count");
    }
    return kernels[key] = kernel;
  }
};

GeneratedKernels &generatedKernels() {
  static GeneratedKernels kernels;
  return kernels;
}

} // namespace

extern "C" void titan_rt_launch_generated(const void *image, const char *name,
                                          void *const *buffers, int64_t count,
                                          int64_t elements,
                                          int64_t reductions) {
  // A reduction's starting value, +0.0 (absmax over nothing): a memset on
  // the stream (a CUDA graph's memset node), not a kernel.
  for (int64_t i = count - reductions; i < count; ++i)
    checkCuda(
        cudaMemsetAsync(buffers[i], 0, sizeof(float), kernelContext().stream),
        std::string("zeroing the reduction of generated kernel ") + name);
  if (elements <= 0)
    return;
  KernelEvents timed(name);
  GeneratedKernels &all = generatedKernels();
  cudaKernel_t kernel = all.lookup(image, name);
  // The kernel's parameters: each buffer's address, then the work items.
  std::vector<void *> args;
  args.reserve(size_t(count) + 1);
  for (int64_t i = 0; i < count; ++i)
    args.push_back(const_cast<void **>(&buffers[i]));
  args.push_back(&elements);
  int64_t blocks =
      std::min<int64_t>((elements + kThreads - 1) / kThreads,
                        int64_t(all.multiprocessors) * kBlocksPerSM);
  checkCuda(cudaLaunchKernel(reinterpret_cast<const void *>(kernel),
                             dim3(unsigned(blocks)), dim3(kThreads),
                             args.data(), 0, kernelContext().stream),
            std::string("launching generated kernel ") + name);
}
