//===- Format.cpp - human-readable numbers --------------------------------===//

#include "titan/Support/Format.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

std::string titan::formatNumber(double value) {
  // Whole numbers print as integers ("500000", not "5e+05"); only a value
  // an int64 holds is converted (a NaN or an infinity is not one).
  if (std::fabs(value) < 1e15 && value == std::trunc(value))
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

/// `n` in the largest of `units` (each `base` times the previous) that keeps
/// a leading digit, with two decimals; whole numbers in the first unit.
static std::string scaled(double n, double base,
                          std::initializer_list<const char *> units) {
  size_t u = 0;
  while (n >= base && u + 1 < units.size()) {
    n /= base;
    ++u;
  }
  const char *name = units.begin()[u];
  std::string unit = *name ? std::string(" ") + name : "";
  char buffer[64];
  if (u == 0 && n == double(int64_t(n)))
    std::snprintf(buffer, sizeof(buffer), "%lld%s", (long long)n, unit.c_str());
  else
    std::snprintf(buffer, sizeof(buffer), "%.2f%s", n, unit.c_str());
  return buffer;
}

std::string titan::humanCount(double n) {
  return scaled(n, 1000, {"", "K", "M", "B", "T"});
}

std::string titan::humanBytes(double bytes) {
  return scaled(bytes, 1024, {"B", "KiB", "MiB", "GiB", "TiB"});
}
