//===- CudaTestMain.cpp - the CUDA kernel tests' main ---------------------===//
//
// Exits 77 (ctest: skipped) on a machine without a GPU.
//
//===----------------------------------------------------------------------===//

#include "gtest/gtest.h"

#include <cuda_runtime.h>

#include <cstdio>

int main(int argc, char **argv) {
  ::testing::InitGoogleTest(&argc, argv);
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("skipped: the CUDA kernel tests need a GPU\n");
    return 77;
  }
  return RUN_ALL_TESTS();
}
