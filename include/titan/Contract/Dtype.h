//===- Dtype.h - the element types of compiler and runtime ------*- C++ -*-===//
//
// titan::Dtype, the one element type enum that the kernel catalog, the
// runtime's kernels, collectives and checkpoints, and the CUDA GEMM plans
// share: its value is the code compiled programs pass to the runtime
// (Dtype.def), so no layer converts between its own spellings. Plain C++
// (no MLIR): the runtime includes it.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONTRACT_DTYPE_H
#define TITAN_CONTRACT_DTYPE_H

#include <cstdint>
#include <optional>
#include <string_view>

namespace titan {

/// An element type of a compiled program's buffers; its value is the ABI's
/// code (TITAN_RT_<NAME> in titanrt/KernelABI.h).
enum class Dtype : uint8_t {
#define TITAN_DTYPE(name, NAME, code, bytes, torch) name = code,
#include "titan/Contract/Dtype.def"
};

/// Every Dtype, in the order of their codes.
inline constexpr Dtype kDtypes[] = {
#define TITAN_DTYPE(name, ...) Dtype::name,
#include "titan/Contract/Dtype.def"
};
inline constexpr unsigned kNumDtypes = sizeof(kDtypes) / sizeof(kDtypes[0]);

namespace detail {
struct DtypeInfo {
  const char *name;
  int64_t bytes;
  const char *torch;
};
inline constexpr DtypeInfo kDtypeInfo[] = {
#define TITAN_DTYPE(name, NAME, code, bytes, torch) {#name, bytes, torch},
#include "titan/Contract/Dtype.def"
};
/// Whether the codes are 0, 1, 2, ...: a Dtype indexes kDtypeInfo and the
/// tables keyed on it.
constexpr bool codesAreIndices() {
  for (unsigned i = 0; i < kNumDtypes; ++i)
    if (unsigned(kDtypes[i]) != i)
      return false;
  return true;
}
static_assert(codesAreIndices(), "Dtype.def must list the codes 0, 1, ...");
} // namespace detail

/// The catalog's spelling: "f32", "bf16", "f8E4M3FN", ... (the entry points'
/// suffixes, and messages).
constexpr const char *dtypeName(Dtype d) {
  return detail::kDtypeInfo[unsigned(d)].name;
}
/// Bytes per element.
constexpr int64_t dtypeBytes(Dtype d) {
  return detail::kDtypeInfo[unsigned(d)].bytes;
}
/// PyTorch's name: "float32", "bfloat16", ... (configs, HF files).
constexpr const char *torchDtypeName(Dtype d) {
  return detail::kDtypeInfo[unsigned(d)].torch;
}

/// The Dtype spelled `name` as dtypeName spells it, if any.
constexpr std::optional<Dtype> parseDtype(std::string_view name) {
  for (Dtype d : kDtypes)
    if (name == dtypeName(d))
      return d;
  return std::nullopt;
}
/// The Dtype PyTorch names `name` ("bfloat16"), if any.
constexpr std::optional<Dtype> parseTorchDtype(std::string_view name) {
  for (Dtype d : kDtypes)
    if (name == torchDtypeName(d))
      return d;
  return std::nullopt;
}
/// The Dtype of ABI code `code` (an entry of a call's `types`), if any.
constexpr std::optional<Dtype> dtypeFromCode(int64_t code) {
  if (code < 0 || code >= int64_t(kNumDtypes))
    return std::nullopt;
  return Dtype(code);
}

} // namespace titan

#endif // TITAN_CONTRACT_DTYPE_H
