//===- CUDABackend.h - the CUDA target --------------------------*- C++ -*-===//
//
// Training on NVIDIA GPUs: the CUDA kernels (cuBLASLt, cuDNN, titan's own
// fused kernels) linked statically into the executable, NCCL between
// ranks. The compiler needs no CUDA toolkit for it: the workspace rules are
// sizes only, and the link reads what this build configured.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_TARGET_CUDA_CUDABACKEND_H
#define TITAN_TARGET_CUDA_CUDABACKEND_H

#include "titan/Target/TargetBackend.h"

namespace titan::target {

/// The CUDA target's backend, named "cuda".
std::unique_ptr<TargetBackend> createCUDATargetBackend();

} // namespace titan::target

#endif // TITAN_TARGET_CUDA_CUDABACKEND_H
