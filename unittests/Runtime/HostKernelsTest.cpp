//===- HostKernelsTest.cpp - libtitanrt_host's entries
//---------------------===//
//
// A host step (training.enable_cpu_offload's optimizer) calls
// titan_rt_host_<kernel>_<dtype> on any target: every kernel the catalog
// flags kHostStep has its f32 and f64 entries, and they compute what
// PyTorch and TorchTitan do (the CPU target's entries call the same
// functions; Integration/cpu-offload.test trains to the same bits with and
// without offloading).
//
//===----------------------------------------------------------------------===//

#include "titanrt/KernelABI.h"

#include "titan/Contract/CPUWorkspaces.h"
#include "titan/Contract/KernelCatalog.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

using namespace titan;

namespace {

TEST(HostKernels, EveryHostStepKernelHasItsEntries) {
  int flagged = 0;
  for (const catalog::Entry &entry : catalog::kEntries) {
    if (!entry.has(catalog::kHostStep))
      continue;
    ++flagged;
    EXPECT_EQ(entry.kind, catalog::Kind::Kernel) << entry.name;
    for (const char *dtype : {"f32", "f64"}) {
      std::string symbol =
          std::string("titan_rt_host_") + entry.name + "_" + dtype;
      EXPECT_NE(dlsym(RTLD_DEFAULT, symbol.c_str()), nullptr) << symbol;
    }
  }
  EXPECT_EQ(flagged, 2); // global_norm, lr_schedule
}

// Against a plain reference: each tensor's norm in f64 rounded to f32, as
// torch.nn.utils.clip_grad_norm_ stacks them, then the norm of norms.
TEST(HostKernels, GlobalNormIsTheNormOfTheTensorsNorms) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> a(100003), b(517);
  for (float &x : a)
    x = normal(rng);
  for (float &x : b)
    x = normal(rng);
  double total = 0;
  for (const std::vector<float> *t : {&a, &b}) {
    double squares = 0;
    for (float x : *t)
      squares += double(x) * double(x);
    float norm = float(std::sqrt(squares));
    total += double(norm) * norm;
  }
  float norm = 0;
  std::vector<double> workspace(
      size_t(cpu::globalNormWorkspaceBytes(int64_t(a.size()))) /
          sizeof(double) +
      1);
  const int64_t shapes[] = {1, int64_t(a.size()), 1, int64_t(b.size()), 0};
  const int64_t ints[] = {2};
  const int64_t types[] = {2, 1, 0, 0, 0};
  void *buffers[] = {a.data(), b.data(), &norm};
  titan_rt_host_global_norm_f32(buffers, shapes, ints, nullptr,
                                workspace.data(), types);
  EXPECT_FLOAT_EQ(norm, float(std::sqrt(total)));
}

// TorchTitan v0.2.0's schedule (components/lr_scheduler.py) by hand: 10
// steps, 2 of linear warmup, decay over round(10 x 0.6) = 6 steps, so 10 +
// 1 - 2 - 6 = 3 stable; linear decay to 0.1 of lr 3e-3.
TEST(HostKernels, LrScheduleIsTorchTitans) {
  const std::pair<int64_t, double> expected[] = {
      {0, 3e-3 * 0.5},                          // warmup (0 + 1) / 2
      {1, 3e-3},                                // warmup done
      {4, 3e-3},                                // stable
      {5, 3e-3 * (0.1 + 0.9 * (1 - 1.0 / 6))},  // decay 1/6 in
      {9, 3e-3 * (0.1 + 0.9 * (1 - 5.0 / 6))}}; // decay 5/6 in
  for (auto [step, lr] : expected) {
    int64_t totalSteps = 10;
    float out = 0;
    const int64_t shapes[] = {0, 0, 0};
    const int64_t ints[] = {2, 0}; // warmup steps, linear decay
    const double floats[] = {3e-3, 0.6, 0.1};
    void *buffers[] = {&step, &totalSteps, &out};
    titan_rt_host_lr_schedule_f32(buffers, shapes, ints, floats, nullptr,
                                  nullptr);
    EXPECT_FLOAT_EQ(out, float(lr)) << "step " << step;
  }
}

void doubleEach(void *const *buffers, int64_t begin, int64_t end) {
  auto *x = static_cast<float *>(buffers[0]);
  for (int64_t i = begin; i < end; ++i)
    x[i] *= 2;
}

TEST(HostKernels, ParallelForCoversEveryItem) {
  std::vector<float> x(70001, 1.5f);
  void *buffers[] = {x.data()};
  titan_rt_host_parallel_for(doubleEach, buffers, int64_t(x.size()), 0,
                             "double", int64_t(x.size() * 4));
  for (float v : x)
    ASSERT_EQ(v, 3.f);
}

} // namespace
