//===- FusedRowKernelTest.cpp - the CPU's fused kernels vs their parts ----===//
//
// A fused kernel (kernel-fuse-add-rms-norm's add_rms_norm) must give the
// bits of the calls it replaces, on any number of threads.
//
//===----------------------------------------------------------------------===//

#include "Kernels.h"

#include "gtest/gtest.h"

#include <omp.h>

#include <random>
#include <string>
#include <vector>

using namespace titanrt::kernels;

namespace {

template <typename T> void checkAddRmsNorm(int64_t rows, int64_t dim) {
  SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(dim));
  std::mt19937_64 rng(rows * 31 + dim);
  std::normal_distribution<double> normal;
  std::vector<T> a(rows * dim), b(rows * dim), w(dim);
  for (T &x : a)
    x = T(normal(rng));
  for (T &x : b)
    x = T(normal(rng));
  for (T &x : w)
    x = T(1 + 0.1 * normal(rng));
  std::vector<T> h(rows * dim), y(rows * dim);
  for (int64_t i = 0; i < rows * dim; ++i)
    h[i] = a[i] + b[i];
  rmsNorm(h.data(), w.data(), y.data(), rows, dim, 1e-5);
  for (int threads : {1, 3}) {
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    std::vector<T> fusedH(rows * dim), fusedY(rows * dim);
    addRmsNorm(a.data(), b.data(), w.data(), fusedH.data(), fusedY.data(), rows,
               dim, 1e-5);
    omp_set_num_threads(saved);
    EXPECT_EQ(fusedH, h) << threads << " threads";
    EXPECT_EQ(fusedY, y) << threads << " threads";
  }
}

TEST(FusedRowKernels, AddRmsNormIsTheAddThenTheNorm) {
  for (auto [rows, dim] :
       {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {2048, 256}, {5, 4096}}) {
    checkAddRmsNorm<float>(rows, dim);
    checkAddRmsNorm<double>(rows, dim);
  }
}

} // namespace
