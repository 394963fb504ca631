//===- HostKernelsTest.cpp - libtitanrt_host's entries ---------------------===//
//
// A host step (training.enable_cpu_offload's optimizer) calls
// titan_rt_host_<kernel>_<dtype> on any target: every kernel the catalog
// flags kHostStep has its f32 and f64 entries, and they give the CPU
// target's entries' bits (Integration/cpu-offload.test trains to the same
// bits with and without offloading on that).
//
//===----------------------------------------------------------------------===//

#include "titanrt/KernelABI.h"

#include "titan/Contract/CPUWorkspaces.h"
#include "titan/Contract/KernelCatalog.h"

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <cstring>
#include <random>
#include <string>
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

TEST(HostKernels, GlobalNormGivesTheCpuTargetsBits) {
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::vector<float> a(100003), b(517);
  for (float &x : a)
    x = normal(rng);
  for (float &x : b)
    x = normal(rng);
  float hostNorm = 0, cpuNorm = 0;
  std::vector<double> workspace(
      size_t(cpu::globalNormWorkspaceBytes(int64_t(a.size()))) /
          sizeof(double) +
      1);
  const int64_t shapes[] = {1, int64_t(a.size()), 1, int64_t(b.size()), 0};
  const int64_t ints[] = {2};
  const int64_t types[] = {2, 1, 0, 0, 0};
  void *hostBuffers[] = {a.data(), b.data(), &hostNorm};
  void *cpuBuffers[] = {a.data(), b.data(), &cpuNorm};
  titan_rt_host_global_norm_f32(hostBuffers, shapes, ints, nullptr,
                                workspace.data(), types);
  titan_rt_global_norm_f32(cpuBuffers, shapes, ints, nullptr,
                           workspace.data(), types);
  EXPECT_GT(hostNorm, 0.f);
  EXPECT_EQ(std::memcmp(&hostNorm, &cpuNorm, sizeof(float)), 0);
}

TEST(HostKernels, LrScheduleGivesTheCpuTargetsBits) {
  for (int64_t step : {0, 1, 5, 9}) {
    int64_t totalSteps = 10;
    float host = 0, cpu = 0;
    const int64_t shapes[] = {0, 0, 0};
    // warmup 2, linear decay; lr 3e-3, decay ratio 0.6, min factor 0.1.
    const int64_t ints[] = {2, 0};
    const double floats[] = {3e-3, 0.6, 0.1};
    void *hostBuffers[] = {&step, &totalSteps, &host};
    void *cpuBuffers[] = {&step, &totalSteps, &cpu};
    titan_rt_host_lr_schedule_f32(hostBuffers, shapes, ints, floats, nullptr,
                                  nullptr);
    titan_rt_lr_schedule_f32(cpuBuffers, shapes, ints, floats, nullptr,
                             nullptr);
    EXPECT_GT(host, 0.f) << step;
    EXPECT_EQ(host, cpu) << step;
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
