//===- Format.cpp - human-readable numbers --------------------------------===//

#include "titan/Support/Format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

std::string titan::formatNumber(double value) {
  // Whole numbers print as integers ("500000", not "5e+05").
  if (value == static_cast<double>(static_cast<int64_t>(value)) &&
      std::fabs(value) < 1e15)
    return std::to_string(static_cast<int64_t>(value));
  char buffer[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof(buffer), "%.*g", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  return buffer;
}

std::string titan::formatWithCommas(int64_t value) {
  std::string digits = std::to_string(value < 0 ? -value : value), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return value < 0 ? "-" + out : out;
}
