//===- Fp8ConversionTest.cpp - fp8 casts bit-exact with CUDA's ------------===//
//
// titan's CPU conversions to and from fp8 (runtime/lib/LowPrecision.h)
// against the host side of CUDA's cuda_fp8.h, compiled with the host
// compiler (no GPU needed): every bf16 and every f16 input, 10^8 random
// float32 bit patterns per format, and the edge cases (NaN, infinities,
// signed zeros, subnormals, ties, values just below and above the largest
// finite value and the overflow threshold), saturating and not; and every
// fp8 code's value. Built where the CUDA headers are (TITAN_HAVE_CUDA_FP8).
//
//===----------------------------------------------------------------------===//

#include "LowPrecision.h"

#include <cuda_fp8.h>

#include "gtest/gtest.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

using namespace titanrt;

namespace {

__nv_fp8_interpretation_t cudaFormat(Dtype format) {
  return format == Dtype::f8E4M3FN ? __NV_E4M3 : __NV_E5M2;
}

uint8_t cudaCast(float x, Dtype format, bool saturate) {
  return __nv_cvt_float_to_fp8(x, saturate ? __NV_SATFINITE : __NV_NOSAT,
                               cudaFormat(format));
}

float fromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

/// Counts the inputs of `inputs()` (a generator of floats, called with an
/// index) whose titan and CUDA conversions differ, in both saturation
/// modes, on every core; reports the first few.
template <typename Input>
void expectSameOver(uint64_t count, Dtype format, Input input) {
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<uint64_t> mismatches(threads, 0);
  std::vector<float> first(threads, 0);
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (uint64_t i = t; i < count; i += threads) {
        float x = input(i);
        for (bool saturate : {true, false})
          if (floatToFp8(x, format, saturate) != cudaCast(x, format, saturate))
            if (mismatches[t]++ == 0)
              first[t] = x;
      }
    });
  for (std::thread &t : pool)
    t.join();
  for (unsigned t = 0; t < threads; ++t)
    EXPECT_EQ(mismatches[t], 0u) << "first mismatch at " << first[t]
                                 << " (bits 0x" << std::hex <<
        [&] {
          uint32_t b;
          std::memcpy(&b, &first[t], sizeof(b));
          return b;
        }() << ")";
}

class Fp8Conversion : public ::testing::TestWithParam<Dtype> {};

TEST_P(Fp8Conversion, EveryBf16) {
  expectSameOver(1 << 16, GetParam(),
                 [](uint64_t i) { return bf16ToFloat(uint16_t(i)); });
}

TEST_P(Fp8Conversion, EveryF16) {
  expectSameOver(1 << 16, GetParam(),
                 [](uint64_t i) { return f16ToFloat(uint16_t(i)); });
}

TEST_P(Fp8Conversion, HundredMillionRandomFloats) {
  // Random bit patterns cover every exponent; a counter-based mix keeps
  // each thread's inputs independent of the thread count.
  expectSameOver(100'000'000, GetParam(), [](uint64_t i) {
    uint64_t z = (i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return fromBits(uint32_t(z ^ (z >> 31)));
  });
}

TEST_P(Fp8Conversion, EdgeCases) {
  Dtype format = GetParam();
  bool e4m3 = format == Dtype::f8E4M3FN;
  float max = e4m3 ? 448.0f : 57344.0f, halfUlp = e4m3 ? 16.0f : 4096.0f;
  float minSubnormal = e4m3 ? std::ldexp(1.0f, -9) : std::ldexp(1.0f, -16);
  std::vector<float> cases = {0.0f,
                              -0.0f,
                              INFINITY,
                              -INFINITY,
                              std::nanf(""),
                              -std::nanf(""),
                              std::numeric_limits<float>::denorm_min(),
                              -std::numeric_limits<float>::denorm_min(),
                              std::numeric_limits<float>::min(),
                              std::numeric_limits<float>::max(),
                              -std::numeric_limits<float>::max(),
                              max,
                              -max,
                              max + halfUlp,
                              -(max + halfUlp),
                              minSubnormal,
                              minSubnormal / 2,
                              minSubnormal * 1.5f,
                              minSubnormal * 2.5f,
                              1.0f,
                              1.5f,
                              3.0f};
  for (float base : {max, max + halfUlp, minSubnormal / 2, minSubnormal,
                     1.0f + (e4m3 ? 1.0f / 16 : 1.0f / 8)})
    for (float sign : {1.0f, -1.0f}) {
      cases.push_back(sign * std::nextafter(base, 0.0f));
      cases.push_back(sign * std::nextafter(base, INFINITY));
    }
  for (float x : cases)
    for (bool saturate : {true, false})
      EXPECT_EQ(floatToFp8(x, format, saturate), cudaCast(x, format, saturate))
          << x << (saturate ? " saturating" : " not saturating");
  // torchao's saturated cast of the largest values and of infinity.
  EXPECT_EQ(fp8ToFloat(floatToFp8(INFINITY, format, true), format), max);
  EXPECT_EQ(fp8ToFloat(floatToFp8(-1e30f, format, true), format), -max);
}

TEST_P(Fp8Conversion, EveryCodeDecodes) {
  Dtype format = GetParam();
  for (int code = 0; code < 256; ++code) {
    __half_raw half =
        __nv_cvt_fp8_to_halfraw(uint8_t(code), cudaFormat(format));
    float expected = f16ToFloat(half.x);
    float actual = fp8ToFloat(uint8_t(code), format);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(actual)) << "code " << code;
      continue;
    }
    EXPECT_EQ(actual, expected) << "code " << code;
    EXPECT_EQ(std::signbit(actual), std::signbit(expected)) << "code " << code;
    // Every finite value converts back to its code.
    if (std::isfinite(actual)) {
      EXPECT_EQ(floatToFp8(actual, format, true), uint8_t(code))
          << "code " << code;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, Fp8Conversion,
                         ::testing::Values(Dtype::f8E4M3FN, Dtype::f8E5M2),
                         [](const auto &info) {
                           return info.param == Dtype::f8E4M3FN
                                      ? std::string("E4M3FN")
                                      : std::string("E5M2");
                         });

} // namespace
