//===- KernelCall.h - decoding KernelABI.h's calling convention -*- C++ -*-===//
//
// The arguments of one titan_rt_<kernel>_<dtype> call (KernelABI.h), as
// both targets' kernel libraries read them. Decoding allocates nothing:
// shapes are read in place from the step's constant arrays.
//
//===----------------------------------------------------------------------===//

#ifndef TITANRT_KERNELCALL_H
#define TITANRT_KERNELCALL_H

#include <cstdint>

namespace titanrt::abi {

/// One buffer's shape, read in place: {rank, dims...}.
struct Shape {
  const int64_t *dims;
  int64_t rank;
  int64_t numel() const {
    int64_t n = 1;
    for (int64_t i = 0; i < rank; ++i)
      n *= dims[i];
    return n;
  }
  int64_t back() const { return dims[rank - 1]; }
  int64_t dim(int64_t i) const { return dims[i]; }
  /// Elements before the last dimension.
  int64_t rows() const { return rank == 0 ? 1 : numel() / back(); }
  /// The rows x cols matrix a tensor of this shape holds: rows() x back(),
  /// or, `transposed` (its last dimension moved first, as titan.quantize
  /// writes a scaled GEMM's K-major operand), the matrix before that.
  struct Matrix {
    int64_t rows, cols;
  };
  Matrix matrix(bool transposed) const {
    if (!transposed)
      return {rows(), back()};
    return {numel() / dims[0], dims[0]};
  }
};

/// The arguments of one kernel call.
struct Call {
  void **buffers;
  const int64_t *shapes;
  const int64_t *ints;
  const double *floats;
  void *workspace;
  /// The call's number of input buffers (the ABI's `types` header): whether
  /// an optional input (KernelCatalog.def) is there.
  int64_t inputs = -1;

  template <typename T> T *buf(int i) const {
    return static_cast<T *>(buffers[i]);
  }
  /// The shape of buffer `i` (buffers are few; the scan is short).
  Shape shape(int i) const {
    const int64_t *s = shapes;
    for (int j = 0; j < i; ++j)
      s += 1 + s[0];
    return {s + 1, s[0]};
  }
  /// Ops with an optional vocab_start operand: ints[0] says whether it is
  /// present; it then follows the indices (buffer 2).
  bool hasVocabStart() const { return ints[0] != 0; }
  const int32_t *vocabStart() const {
    return hasVocabStart() ? buf<int32_t>(2) : nullptr;
  }
};

} // namespace titanrt::abi

#endif // TITANRT_KERNELCALL_H
