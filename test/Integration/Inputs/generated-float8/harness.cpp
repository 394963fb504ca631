// Runs the compiled step of step.mlir on an arena read from argv[1] (its
// first 3 MiB: gate, up, x), then, as the reference for the generated
// casts, the runtime library's hand-written quantize kernel (the one the
// transposed casts still use) on y and x with the step's scales, and
// writes the whole arena (the library's codes at 8 and 9 MiB) to argv[2].
#include "titanrt/KernelABI.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

extern "C" void titan_step(void *arena);

namespace {
constexpr int64_t kN = 135173;
constexpr size_t kMiB = 1u << 20;

float bf16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof(f));
  return f;
}

/// The library's untransposed, tensorwise quantize of the bf16 vector at
/// `input` (widened to f32 exactly) with the scale at `scale`, to `out`.
void libraryQuantize(unsigned char *arena, size_t input, size_t scale,
                     size_t out, int64_t format, int64_t code) {
  std::vector<float> wide(kN);
  for (int64_t i = 0; i < kN; ++i) {
    uint16_t bits;
    std::memcpy(&bits, arena + input + 2 * i, sizeof(bits));
    wide[i] = bf16ToFloat(bits);
  }
  void *buffers[] = {wide.data(), arena + scale, arena + out};
  int64_t shapes[] = {1, kN, 0, 1, kN};
  int64_t ints[] = {format, 0};
  int64_t types[] = {2, 1, TITAN_RT_F32, TITAN_RT_F32, code};
  titan_rt_quantize_f32(buffers, shapes, ints, nullptr, nullptr, types);
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  std::vector<unsigned char> arena(10 * kMiB);
  FILE *in = std::fopen(argv[1], "rb");
  if (!in || std::fread(arena.data(), 1, 3 * kMiB, in) != 3 * kMiB)
    return 1;
  std::fclose(in);
  titan_step(arena.data());
  libraryQuantize(arena.data(), 3 * kMiB, 4 * kMiB + 256, 8 * kMiB, 0,
                  TITAN_RT_F8E4M3FN);
  libraryQuantize(arena.data(), 2 * kMiB, 6 * kMiB + 256, 9 * kMiB, 1,
                  TITAN_RT_F8E5M2);
  FILE *out = std::fopen(argv[2], "wb");
  if (!out || std::fwrite(arena.data(), 1, arena.size(), out) != arena.size())
    return 1;
  std::fclose(out);
  return 0;
}
