//===- SafeTensors.h - safetensors checkpoint I/O ---------------*- C++ -*-===//

#ifndef TITANRT_LIB_SAFETENSORS_H
#define TITANRT_LIB_SAFETENSORS_H

#include <cstdint>
#include <string>
#include <vector>

namespace titanrt {

/// A named float32 tensor in memory.
struct TensorRef {
  std::string name;
  std::vector<int64_t> shape;
  float *data;
  int64_t numel() const;
};

/// Writes `tensors` to `path` in the safetensors format with dtype F32, BF16
/// or F16 (`exportDtype` float32 | bfloat16 | float16). The file is written
/// to a temporary name and renamed, so an interrupted save never replaces a
/// good checkpoint with a partial one.
void saveSafetensors(const std::string &path,
                     const std::vector<TensorRef> &tensors,
                     const std::string &exportDtype);

/// Reads exactly `tensors` (by name) from a safetensors file with F32, BF16 or
/// F16 data into their buffers. A missing, extra or mis-shaped tensor, an
/// unsupported dtype or a truncated file is a fatal error naming it.
void loadSafetensors(const std::string &path,
                     const std::vector<TensorRef> &tensors);

} // namespace titanrt

#endif // TITANRT_LIB_SAFETENSORS_H
