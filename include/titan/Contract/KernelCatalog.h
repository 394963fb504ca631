//===- KernelCatalog.h - the kernels the compiler may call ------*- C++ -*-===//
//
// KernelCatalog.def as a constant table: what kernel.call's verifier checks
// a call against, and the KernelId that passes name kernels with. Plain
// C++ (no MLIR), like the .def the runtime expands.
//
//===----------------------------------------------------------------------===//

#ifndef TITAN_CONTRACT_KERNELCATALOG_H
#define TITAN_CONTRACT_KERNELCATALOG_H

#include "titan/Contract/Dtype.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace titan::catalog {

/// How a target defines a kernel's entry points (KernelCatalog.def).
enum class Kind : uint8_t { Kernel, Special, Collective, Generated };

/// An entry point's suffix (titan::Dtype), as one bit of Entry::dtypes.
constexpr unsigned dtypeBit(Dtype d) { return 1u << unsigned(d); }

enum Flags : unsigned {
  kNone = 0,
  kWorkspace = 1,
  kFloat8Buffers = 2,
  kI64Buffers = 4,
  /// The kernel exchanges data with the ranks of the group of its
  /// `axis_mask` parameter (as a collective does, inside one call): every
  /// rank of the group must call it in the same order.
  kCommunicates = 8,
  /// A host step (training.enable_cpu_offload's optimizer,
  /// kernel.host_step) may call it: libtitanrt_host defines its f32 and f64
  /// entries as titan_rt_host_<name>_<dtype> on host memory.
  kHostStep = 16,
};

/// How many times a buffer or parameter occurs in a call.
enum class Quantity : uint8_t { One, Optional, Counted };

struct Buffer {
  const char *name = nullptr;
  Quantity quantity = Quantity::One;
  /// The input this output may be written over (in place), or -1.
  int inPlaceOf = -1;

  constexpr Buffer counted() const {
    return {name, Quantity::Counted, inPlaceOf};
  }
  /// The last input, present or not: the call's number of inputs says.
  constexpr Buffer optional() const {
    return {name, Quantity::Optional, inPlaceOf};
  }
  constexpr Buffer over(int input) const { return {name, quantity, input}; }
};
constexpr Buffer In(const char *name) { return {name}; }
constexpr Buffer Out(const char *name) { return {name}; }

enum class ParamType : uint8_t { I64, F64 };

struct Param {
  const char *name = nullptr;
  ParamType type = ParamType::I64;
  Quantity quantity = Quantity::One;

  constexpr Param optional() const { return {name, type, Quantity::Optional}; }
  constexpr Param counted() const { return {name, type, Quantity::Counted}; }
};
constexpr Param I64(const char *name) { return {name, ParamType::I64}; }
constexpr Param F64(const char *name) { return {name, ParamType::F64}; }

constexpr size_t kMaxBuffers = 8, kMaxParams = 8;

/// One kernel; lists end at the first unnamed element.
struct Entry {
  const char *name;
  Kind kind;
  unsigned dtypes;
  unsigned flags;
  /// The i64 parameter that counts the `Counted` buffers and parameters,
  /// or -1.
  int countParam;
  Buffer inputs[kMaxBuffers];
  Buffer outputs[kMaxBuffers];
  Param params[kMaxParams];

  bool has(Flags flag) const { return (flags & flag) != 0; }
  /// Whether the kernel has an entry point for `dtype`.
  bool has(Dtype dtype) const { return (dtypes & dtypeBit(dtype)) != 0; }
};

/// The kernels by name, for passes: KernelId::adamw.
enum class KernelId : unsigned {
#define TITAN_KERNEL(name, ...) name,
#include "titan/Contract/KernelCatalog.def"
};

#define TITAN_KERNEL_LIST(...)                                                 \
  { __VA_ARGS__ }
#define TITAN_KERNEL_DTYPE_BIT(name, dtype) | dtypeBit(Dtype::dtype)
inline constexpr Entry kEntries[] = {
#define TITAN_KERNEL(name, impl, kind, dtypes, flags, count, inputs, outputs,  \
                     params)                                                   \
  {#name,                                                                      \
   Kind::kind,                                                                 \
   0u TITAN_KERNEL_DTYPES_##dtypes(TITAN_KERNEL_DTYPE_BIT, name),              \
   flags,                                                                      \
   count,                                                                      \
   TITAN_KERNEL_LIST inputs,                                                   \
   TITAN_KERNEL_LIST outputs,                                                  \
   TITAN_KERNEL_LIST params},
#include "titan/Contract/KernelCatalog.def"
};
#undef TITAN_KERNEL_DTYPE_BIT
#undef TITAN_KERNEL_LIST

constexpr const Entry &get(KernelId id) { return kEntries[unsigned(id)]; }
constexpr const char *name(KernelId id) { return get(id).name; }

/// The entry named `name`, or null.
inline const Entry *lookup(std::string_view name) {
  for (const Entry &entry : kEntries)
    if (name == entry.name)
      return &entry;
  return nullptr;
}

/// Where parameter `name` stands in a call's parameters: its index, when
/// every parameter before it occurs exactly once.
inline std::optional<unsigned> paramIndex(const Entry &entry,
                                          std::string_view name) {
  for (unsigned i = 0; i < kMaxParams && entry.params[i].name; ++i) {
    if (name == entry.params[i].name)
      return i;
    if (entry.params[i].quantity != Quantity::One)
      return std::nullopt;
  }
  return std::nullopt;
}

/// The input that output `result` of kernel `name` may be written over (in
/// place), if any.
inline std::optional<unsigned> inPlaceInput(std::string_view name,
                                            unsigned result) {
  const Entry *entry = lookup(name);
  if (!entry || result >= kMaxBuffers || entry->outputs[result].inPlaceOf < 0)
    return std::nullopt;
  return unsigned(entry->outputs[result].inPlaceOf);
}

} // namespace titan::catalog

#endif // TITAN_CONTRACT_KERNELCATALOG_H
