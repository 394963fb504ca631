//===- VectorMath.h - vectorizable math for the CPU kernels -----*- C++ -*-===//
//
// The CPU kernels' hot loops (attention's softmax tiles, SwiGLU/SiLU, the
// loss's exponentials) are written as plain loops over these inline
// functions, which the compiler vectorizes; TITAN_VECTOR_CLONES compiles a
// function once per x86-64 level (AVX-512, AVX2+FMA, SSE2) and picks the
// machine's at load, so one binary runs everywhere and uses what it has.
// glibc's expf is scalar (about 3 ns each here); fastExp is ~0.3 ns in a
// vectorized loop.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_VECTORMATH_H
#define TITANRT_LIB_VECTORMATH_H

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TITAN_VECTOR_CLONES                                                    \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TITAN_VECTOR_CLONES
#endif

namespace titanrt::vmath {

/// e^x in f32 within 2 ulp of the exact value for every finite x whose
/// result is normal (tested against an f64 exp in VectorMathTest); 0 below
/// -104 (where e^x is under the smallest subnormal), +inf above
/// ln(FLT_MAX), NaN for NaN. Cody-Waite reduction x = n ln2 + r, |r| <=
/// ln2 / 2, Cephes' degree-7 polynomial for e^r, then 2^n as two
/// exponent-field factors so that subnormal results round once. Branch-free
/// so that loops over it vectorize.
inline float fastExp(float x) {
  constexpr float kLog2e = 1.44269504088896341f;
  constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
  constexpr float kMin = -104.0f, kMax = 88.7228391f;
  // Written so that NaN clamps to kMin: converting NaN to an integer below
  // is undefined (NaN's result is chosen at the end).
  float xc = x > kMin ? x : kMin;
  xc = xc < kMax ? xc : kMax;
  // Round to nearest (ties to even) by the 1.5 * 2^23 shift, which SSE2
  // vectorizes (nearbyint needs SSE4.1).
  float n = (xc * kLog2e + 12582912.0f) - 12582912.0f;
  float r = xc - n * kLn2Hi;
  r = r - n * kLn2Lo;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  int32_t ni = int32_t(n);
  int32_t half = ni / 2;
  int32_t bits1 = (half + 127) << 23, bits2 = (ni - half + 127) << 23;
  float s1, s2;
  std::memcpy(&s1, &bits1, sizeof(float));
  std::memcpy(&s2, &bits2, sizeof(float));
  float y = p * s1 * s2;
  y = x < kMin ? 0.0f : y;
  y = x > kMax ? INFINITY : y;
  return x != x ? x : y;
}

/// The f64 kernels (the finite-difference gradient checks) keep libm's.
inline double fastExp(double x) { return std::exp(x); }

} // namespace titanrt::vmath

#endif // TITANRT_LIB_VECTORMATH_H
