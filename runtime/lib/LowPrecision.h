//===- LowPrecision.h - bf16, f16 and fp8 conversions -----------*- C++ -*-===//
//
// Conversions between float and the 16-bit and 8-bit formats, rounding to
// nearest even as the GPU's conversions do (NaN stays NaN, infinities
// stay). The fp8 ones are bit-exact with CUDA's (cuda_fp8.h, checked on
// every bf16 and f16 input and 10^8 random floats by
// unittests/Runtime/Fp8ConversionTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_LOWPRECISION_H
#define TITANRT_LIB_LOWPRECISION_H

#include "titan/Contract/Dtype.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace titanrt {

using titan::Dtype;

inline float bf16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, sizeof(f));
  return f;
}

inline uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it a (quiet) NaN
    return uint16_t((bits >> 16) | 0x40);
  uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return uint16_t((bits + roundingBias) >> 16);
}

inline float f16ToFloat(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, sizeof(h));
  return float(h);
}

inline uint16_t floatToF16(float f) {
  _Float16 h = _Float16(f); // IEEE round to nearest even
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof(bits));
  return bits;
}

// The two fp8 formats of Float8 training (OCP FP8), Dtype::f8E4M3FN (4
// exponent bits, bias 7, no infinity, S.1111.111 NaN; max 448) and
// Dtype::f8E5M2 (IEEE-like, bias 15; max 57344), are the `format` below.

/// The value of fp8 `bits`.
inline float fp8ToFloat(uint8_t bits, Dtype format) {
  bool e4m3 = format == Dtype::f8E4M3FN;
  int mantissaBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  int exponent = (bits & 0x7f) >> mantissaBits;
  int mantissa = bits & ((1 << mantissaBits) - 1);
  float sign = (bits & 0x80) ? -1.0f : 1.0f;
  if (e4m3 && (bits & 0x7f) == 0x7f)
    return std::nanf("");
  if (!e4m3 && exponent == 31)
    return mantissa ? std::nanf("") : sign * INFINITY;
  if (exponent == 0) // subnormal
    return sign * std::ldexp(float(mantissa), 1 - bias - mantissaBits);
  return sign * std::ldexp(float(mantissa + (1 << mantissaBits)),
                           exponent - bias - mantissaBits);
}

/// `x` rounded to nearest even in `format`. With `saturate` (CUDA's
/// __NV_SATFINITE, torchao's saturated cast) a value past the largest
/// finite one, infinity included, becomes that (with its sign); without,
/// e4m3fn's NaN or e5m2's infinity. NaN of either sign becomes 0x7f, as
/// the host side of cuda_fp8.h returns it.
inline uint8_t floatToFp8(float x, Dtype format, bool saturate) {
  bool e4m3 = format == Dtype::f8E4M3FN;
  int mantissaBits = e4m3 ? 3 : 2, bias = e4m3 ? 7 : 15;
  if (std::isnan(x))
    return 0x7f;
  uint8_t sign = std::signbit(x) ? 0x80 : 0;
  double a = std::fabs(double(x));
  // Past the largest finite value by half an ulp or more overflows (an
  // e5m2 tie rounds to the odd maximum's successor, infinity; an e4m3 tie
  // at 464 rounds to the even 448).
  double maxFinite = e4m3 ? 448.0 : 57344.0;
  double halfUlp = e4m3 ? 16.0 : 4096.0;
  if (a > maxFinite + halfUlp || (!e4m3 && a == maxFinite + halfUlp)) {
    if (saturate)
      return sign | (e4m3 ? 0x7e : 0x7b);
    return sign | (e4m3 ? 0x7f : 0x7c);
  }
  // The spacing of the format's values around `a`: 2^(exponent -
  // mantissaBits), subnormals sharing the smallest normal binade's.
  int exponent = a == 0 ? 1 - bias : std::ilogb(a);
  exponent = exponent < 1 - bias ? 1 - bias : exponent;
  double quantum = std::ldexp(1.0, exponent - mantissaBits);
  double units = std::nearbyint(a / quantum); // ties to even
  if (units == 0)
    return sign;
  // A carry into the next binade is that binade's first value.
  if (units >= double(2 << mantissaBits)) {
    units /= 2;
    ++exponent;
  }
  int code;
  if (units < double(1 << mantissaBits)) // subnormal
    code = int(units);
  else
    code = ((exponent + bias) << mantissaBits) |
           (int(units) - (1 << mantissaBits));
  return uint8_t(sign | code);
}

} // namespace titanrt

#endif // TITANRT_LIB_LOWPRECISION_H
