// Runs the compiled step of step.mlir on an arena read from argv[1] (its
// first 19 MiB: gate, up, x, z at 10 MiB, and SwiGLU's backward inputs at
// 16 to 18 MiB), then, as the reference for the generated casts, the
// runtime library's hand-written quantize kernel (the one rowwise casts
// still use) on y and x with the step's scales, transposed on z, on the
// reference gradients dg and du with theirs and on u2 with x's, and writes
// the whole arena (the library's codes at 8, 9, 14, 27, 28 and 28.5 MiB)
// to argv[2].
#include "titanrt/KernelABI.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

extern "C" void titan_step(void *arena);

namespace {
constexpr int64_t kN = 135173;
constexpr int64_t kRows = 131, kCols = 1031;
constexpr size_t kMiB = 1u << 20;

float bf16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof(f));
  return f;
}

/// The library's tensorwise quantize of the rows x cols bf16 matrix at
/// `input` (widened to f32 exactly) with the scale at `scale`, to `out`,
/// transposed or not.
void libraryQuantize(unsigned char *arena, size_t input, size_t scale,
                     size_t out, int64_t format, int64_t code, int64_t rows,
                     int64_t cols, bool transposed) {
  std::vector<float> wide(rows * cols);
  for (int64_t i = 0; i < rows * cols; ++i) {
    uint16_t bits;
    std::memcpy(&bits, arena + input + 2 * i, sizeof(bits));
    wide[i] = bf16ToFloat(bits);
  }
  void *buffers[] = {wide.data(), arena + scale, arena + out};
  int64_t shapes[] = {
      2, rows, cols, 0, 2, transposed ? cols : rows, transposed ? rows : cols};
  int64_t ints[] = {format, transposed ? 1 : 0};
  int64_t types[] = {2, 1, TITAN_RT_F32, TITAN_RT_F32, code};
  titan_rt_quantize_f32(buffers, shapes, ints, nullptr, nullptr, types);
}
} // namespace

int main(int argc, char **argv) {
  if (argc != 3)
    return 2;
  std::vector<unsigned char> arena(29 * kMiB);
  FILE *in = std::fopen(argv[1], "rb");
  if (!in || std::fread(arena.data(), 1, 19 * kMiB, in) != 19 * kMiB)
    return 1;
  std::fclose(in);
  titan_step(arena.data());
  libraryQuantize(arena.data(), 3 * kMiB, 4 * kMiB + 256, 8 * kMiB, 0,
                  TITAN_RT_F8E4M3FN, 1, kN, false);
  libraryQuantize(arena.data(), 2 * kMiB, 6 * kMiB + 256, 9 * kMiB, 1,
                  TITAN_RT_F8E5M2, 1, kN, false);
  libraryQuantize(arena.data(), 10 * kMiB, 11 * kMiB + 256, 14 * kMiB, 0,
                  TITAN_RT_F8E4M3FN, kRows, kCols, true);
  libraryQuantize(arena.data(), 19 * kMiB, 21 * kMiB + 256, 27 * kMiB, 1,
                  TITAN_RT_F8E5M2, kRows, kCols, true);
  libraryQuantize(arena.data(), 20 * kMiB, 21 * kMiB + 768, 28 * kMiB, 1,
                  TITAN_RT_F8E5M2, kRows, kCols, true);
  libraryQuantize(arena.data(), 17 * kMiB, 6 * kMiB + 256, 28 * kMiB + kMiB / 2,
                  1, TITAN_RT_F8E5M2, kRows, kCols, true);
  FILE *out = std::fopen(argv[2], "wb");
  if (!out || std::fwrite(arena.data(), 1, arena.size(), out) != arena.size())
    return 1;
  std::fclose(out);
  return 0;
}
