//===- LowPrecision.h - bf16 and f16 conversions ----------------*- C++ -*-===//
//
// Conversions between float and the 16-bit formats, rounding to nearest
// even as the GPU's conversions do (NaN stays NaN, infinities stay).
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_LIB_LOWPRECISION_H
#define TITANRT_LIB_LOWPRECISION_H

#include <cstdint>
#include <cstring>

namespace titanrt {

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

} // namespace titanrt

#endif // TITANRT_LIB_LOWPRECISION_H
