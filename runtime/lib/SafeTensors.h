//===- SafeTensors.h - safetensors checkpoint I/O ---------------*- C++ -*-===//

#ifndef TITANRT_LIB_SAFETENSORS_H
#define TITANRT_LIB_SAFETENSORS_H

#include "titan/Contract/Dtype.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace titanrt {

using titan::Dtype;

/// A named float32 tensor in memory.
struct TensorRef {
  std::string name;
  std::vector<int64_t> shape;
  float *data;
  int64_t numel() const;
};

/// The safetensors format's name of `dtype` ("F32", "BF16", ...).
const char *safetensorsName(Dtype dtype);
/// The Dtype the safetensors format names `name`, if any.
std::optional<Dtype> parseSafetensorsName(llvm::StringRef name);

/// The start of a safetensors file holding `tensors` (names and shapes; data
/// unused) in `dtype`, in order: the 8-byte header length and the header.
/// `dataStart[i]` is set to the file offset of tensor i's first byte, and
/// `fileBytes` to the whole file's size.
std::string safetensorsHeader(const std::vector<TensorRef> &tensors,
                              Dtype dtype, std::vector<int64_t> &dataStart,
                              int64_t &fileBytes);

/// Writes `tensors` to a new file `path` in `dtype` (f32, bf16 or f16;
/// any other is a fatal error) and fsyncs it. The
/// caller makes the save atomic (checkpoints are written into a temporary
/// folder that is renamed when complete).
void writeSafetensors(const std::string &path,
                      const std::vector<TensorRef> &tensors, Dtype dtype);

/// Converts `count` floats to `dtype`'s (f32, bf16 or f16; any other is a
/// fatal error) little-endian bytes at `out`.
void encodeElements(const float *in, int64_t count, Dtype dtype, char *out);

/// Where a safetensors file puts one tensor's data.
struct SafetensorsEntry {
  int64_t offset; ///< of its first byte in the file
  Dtype dtype;    ///< f32, bf16 or f16
};

/// The header length that a safetensors file of `fileSize` bytes starting
/// with the little-endian `lengthBytes` declares; an error (naming the
/// checkpoint `path`) when it cannot be one.
llvm::Expected<uint64_t>
parseSafetensorsHeaderSize(uint64_t fileSize,
                           const unsigned char (&lengthBytes)[8],
                           llvm::StringRef path);

/// Checks the JSON `header` of a safetensors file of `fileSize` bytes
/// against `tensors` (as SafetensorsReader's constructor says) and returns
/// where each of them lies, in their order. Pure: the reader and the fuzz
/// target titan-safetensors-fuzzer share it.
llvm::Expected<std::vector<SafetensorsEntry>>
parseSafetensorsHeader(llvm::StringRef header, uint64_t fileSize,
                       const std::vector<TensorRef> &tensors,
                       llvm::StringRef path);

/// A safetensors file opened for reading, its header checked against the
/// tensors the model expects before any data is read; each rank then reads
/// (pread, not a mapping: the page cache of a large file would count in
/// every rank's resident memory) only the blocks it holds.
class SafetensorsReader {
public:
  /// The file must hold exactly `tensors` (by name and shape, their data
  /// pointers unused) with F32, BF16 or F16 data, and their bytes must tile
  /// the data exactly. A missing, extra or mis-shaped tensor, an unsupported
  /// dtype, overlapping or out-of-bounds offsets or a truncated file is a
  /// fatal error naming it.
  SafetensorsReader(const std::string &path,
                    const std::vector<TensorRef> &tensors);
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader &) = delete;
  SafetensorsReader &operator=(const SafetensorsReader &) = delete;

  /// Elements [first, first + count) of tensor `index` (in the order given
  /// to the constructor, row-major), as float32.
  void read(size_t index, int64_t first, int64_t count, float *out) const;

private:
  std::string path_;
  int fd_ = -1;
  std::vector<SafetensorsEntry> tensors_;
};

} // namespace titanrt

#endif // TITANRT_LIB_SAFETENSORS_H
