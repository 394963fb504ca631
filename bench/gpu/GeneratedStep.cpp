//===- GeneratedStep.cpp - a generated-kernel test's step, GPU or host ----===//
//
// The GPU check runs the generated-kernel tests' steps
// (test/Integration/generated-*.test) on the GPU and on the host, from one
// input: bundle.sh lowers each test's step.mlir for sm_90a and for the host
// into shared objects exporting titan_step(arena); this program loads one
// and runs it on an arena whose first bytes are read from IN, then writes
// the whole arena to OUT (run.sh compares the two and runs the test's
// PyTorch references on the GPU's).
//
//   TitanCudaGeneratedStep STEP.so IN OUT    the arena in device memory
//   TitanGeneratedStepHost STEP.so IN OUT    in host memory
//
// The GPU flavor links the whole CUDA runtime in and exports it
// (-rdynamic) for the step's calls (titan_rt_launch_generated, the scale
// copies' titan_rt_copy); the host step object carries its own link to the
// CPU runtime. An input larger than the arena is refused.
//
//===----------------------------------------------------------------------===//

#include <dlfcn.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#ifdef TITAN_STEP_ON_GPU
#include <cuda_runtime.h>
#endif

namespace {
/// At least the largest arena the tests' steps plan (generated-float8's,
/// 29 MiB; bundle.sh checks each step's).
constexpr size_t kArenaBytes = size_t(32) << 20;

int fail(const char *what, const char *detail = "") {
  std::fprintf(stderr, "generated step: %s%s\n", what, detail);
  return 1;
}

#ifdef TITAN_STEP_ON_GPU
int check(cudaError_t rc, const char *what) {
  if (rc == cudaSuccess)
    return 0;
  return fail(what, (std::string(": ") + cudaGetErrorString(rc)).c_str());
}
#endif
} // namespace

int main(int argc, char **argv) {
  if (argc != 4)
    return fail("usage: STEP.so IN OUT");
  void *library = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!library)
    return fail("cannot load the step: ", dlerror());
  auto step = reinterpret_cast<void (*)(void *)>(dlsym(library, "titan_step"));
  if (!step)
    return fail("the step object has no titan_step");
  std::vector<unsigned char> arena(kArenaBytes);
  FILE *in = std::fopen(argv[2], "rb");
  if (!in)
    return fail("cannot read ", argv[2]);
  size_t read = std::fread(arena.data(), 1, arena.size(), in);
  bool longer = std::fgetc(in) != EOF;
  std::fclose(in);
  if (read == 0)
    return fail("empty input ", argv[2]);
  if (longer)
    return fail("input larger than the arena: ", argv[2]);
#ifdef TITAN_STEP_ON_GPU
  // The runtime's kernels run on the per-thread default stream.
  void *device = nullptr;
  if (check(cudaMalloc(&device, arena.size()), "cudaMalloc") ||
      check(cudaMemcpy(device, arena.data(), arena.size(),
                       cudaMemcpyHostToDevice),
            "copying the arena in"))
    return 1;
  step(device);
  if (check(cudaStreamSynchronize(cudaStreamPerThread), "the step") ||
      check(cudaMemcpy(arena.data(), device, arena.size(),
                       cudaMemcpyDeviceToHost),
            "copying the arena out") ||
      check(cudaFree(device), "cudaFree"))
    return 1;
#else
  step(arena.data());
#endif
  FILE *out = std::fopen(argv[3], "wb");
  if (!out || std::fwrite(arena.data(), 1, arena.size(), out) != arena.size())
    return fail("cannot write ", argv[3]);
  std::fclose(out);
  return 0;
}
