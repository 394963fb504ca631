//===- Format.h - human-readable numbers ------------------------*- C++ -*-===//

#ifndef TITAN_SUPPORT_FORMAT_H
#define TITAN_SUPPORT_FORMAT_H

#include <cstdint>
#include <string>

namespace titan {

/// The shortest decimal form that reads back as the same double
/// (8e-04 -> "0.0008", 500000 -> "500000", 1e-05 -> "1e-05").
std::string formatNumber(double value);

/// An integer with thousands separators: 405853388800 -> "405,853,388,800".
std::string formatWithCommas(int64_t value);

/// A count in K, M, B, T (powers of 1000), two decimals: "405.85 B".
std::string humanCount(double n);

/// Bytes in KiB, MiB, GiB, TiB (powers of 1024), two decimals: "1.50 KiB";
/// whole bytes below 1 KiB: "512 B".
std::string humanBytes(double bytes);

} // namespace titan

#endif // TITAN_SUPPORT_FORMAT_H
